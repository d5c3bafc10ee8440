#!/usr/bin/env python3
"""Writes the seed inputs of the fuzz targets into corpus/<target>/.

Run from anywhere: python3 test/fuzz/make_seeds.py. Deterministic (gzip
headers carry no time stamp), so re-running changes nothing. br and zstd
data come from the brotli and zstd command-line tools. Inputs whose
name starts with "regress-" are reproducers of bugs found by fuzzing; they
are written by hand and this script leaves them alone."""
import os
import subprocess
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
TEXT = (b"respchain keeps the status and headers of every hop and the final "
        b"body, capped, in pooled buffers. ") * 4


def deflate(data, wbits, level=6, strategy=zlib.Z_DEFAULT_STRATEGY):
    c = zlib.compressobj(level, zlib.DEFLATED, wbits, 8, strategy)
    return c.compress(data) + c.flush()


def gzip(data, level=6):
    return deflate(data, 31, level)


def br(data, quality=5, lgwin=22, large=False):
    args = ["brotli", "-c", "-q", str(quality)]
    args += ["--large_window=%d" % lgwin] if large else ["-w", str(lgwin)]
    return subprocess.run(args, input=data, stdout=subprocess.PIPE,
                          check=True).stdout


def zstd(data, level=3, checksum=True, window_log=None):
    """One frame; with window_log, of a window that large (size unknown)."""
    args = ["zstd", "-c", "-q", "-%d" % level,
            "--check" if checksum else "--no-check"]
    if window_log:
        args += ["--zstd=wlog=%d" % window_log, "--no-content-size"]
    return subprocess.run(args, input=data, stdout=subprocess.PIPE,
                          check=True).stdout


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- fuzz_headers: 2 settings bytes, then lines; 0xFF body, 0xFE read. ----

def h_settings(hops_idx, chunk_idx, decode, header_idx, body_idx, policy):
    b0 = hops_idx | chunk_idx << 3 | decode << 5
    b1 = header_idx | body_idx << 3 | policy << 5
    return bytes([b0, b1])


def h_body(data):
    """Body bytes as lines: 0xFF before each piece that ends with a LF (which
    is part of the body), 0xFD before the last piece (its LF is not)."""
    pieces = data.split(b"\n")
    out = b"".join(b"\xff" + p + b"\n" for p in pieces[:-1])
    return out + (b"\xfd" + pieces[-1] + b"\n" if pieces[-1] else b"")


def headers_seeds():
    t = "fuzz_headers"
    std = h_settings(6, 0, 0, 5, 3, 0)  # 16 hops, 4 KiB headers, 8 MiB body
    write(t, "chain-continue-redirect-trailers", std +
          b"HTTP/1.1 100 Continue\r\n\r\n"
          b"HTTP/1.1 301 Moved Permanently\r\nLocation: /b\r\n"
          b"Content-Length: 6\r\n\r\n" + h_body(b"moved\n") + b"\xfe\n"
          b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
          b"Trailer: X-Sum\r\nSet-Cookie: a=1\r\nset-cookie: b=2\r\n\r\n" +
          h_body(b"hello ") + h_body(b"world") +
          b"X-Sum: 42\r\nX-Other:  x  \r\n\r\n")
    write(t, "http2-lowercase", std +
          b"HTTP/2 200 \r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\n" +
          h_body(b"ok"))
    write(t, "hop-cap", h_settings(0, 1, 0, 5, 3, 0) +
          b"HTTP/1.1 302 Found\r\nLocation: /x\r\n\r\nHTTP/1.1 200 OK\r\n\r\n")
    write(t, "header-cap", h_settings(6, 2, 0, 3, 3, 0) +
          b"HTTP/1.1 200 OK\r\nX-Long: " + b"v" * 80 + b"\r\n\r\n")
    write(t, "folded-values", std +
          b"HTTP/1.0 200 OK\r\nX-Fold: one\r\n two\r\n\tthree\r\n"
          b"X-Empty:\r\nX-Spaces:   \r\nNoColon\r\n: empty name\r\n\r\n")
    write(t, "drain-at-cap", h_settings(6, 0, 0, 5, 1, 1) +
          b"HTTP/1.1 200 OK\r\n\r\n" + h_body(b"0123456789abcdef") + b"\xfe\n" +
          h_body(b"more") + b"X-Trailer: t\r\n\r\n")
    write(t, "reject-content-length", h_settings(6, 0, 0, 5, 2, 2) +
          b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + h_body(b"x" * 10))
    write(t, "gzip-decoded", h_settings(6, 3, 1, 5, 3, 0) +
          b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n" +
          h_body(gzip(TEXT)) + b"\xfe\nX-Trailer: 1\r\n\r\n")
    write(t, "not-a-status-line", std + b"garbage\r\nHTTP/1.1 200 OK\r\n\r\n" +
          h_body(b"b") + b"HTTP/1.1 204 No Content\r\n\r\n")


# ---- fuzz_decode: value line, opts, sink failure, chunks, body. ----

def d_seed(value, body, policy=0, codings_idx=4, raw=0, step_idx=2,
           sink_fail=0, chunks=b"\x00"):
    opts = policy | codings_idx << 2 | raw << 5 | step_idx << 6
    return value + b"\n" + bytes([opts, sink_fail]) + chunks + body


def decode_seeds():
    t = "fuzz_decode"
    three = b"\x03\x00\x06\x40"  # pieces of 1, 7, 65 bytes, cycled
    write(t, "gzip", d_seed(b"gzip", gzip(TEXT), chunks=three))
    write(t, "deflate-zlib", d_seed(b"deflate", deflate(TEXT, 15), raw=1))
    write(t, "deflate-raw", d_seed(b"Deflate", deflate(TEXT, -15, 1), step_idx=0))
    write(t, "gzip-then-deflate", d_seed(b"gzip, deflate",
                                         deflate(gzip(TEXT), 15), chunks=three))
    write(t, "x-gzip-members", d_seed(b" x-gzip ", gzip(TEXT[:100]) + gzip(b"") +
                                      gzip(TEXT[100:]), sink_fail=3))
    write(t, "gzip-bomb", d_seed(b"gzip", gzip(b"\0" * (1 << 20), 9), policy=1))
    bad = bytearray(gzip(TEXT))
    bad[len(bad) // 2] ^= 0x55
    write(t, "gzip-corrupt", d_seed(b"gzip", bytes(bad)))
    write(t, "gzip-trailing-junk", d_seed(b"gzip", gzip(TEXT) + b"junk"))
    write(t, "gzip-cut-short", d_seed(b"gzip", gzip(TEXT)[:-5]))
    write(t, "br-not-a-stream", d_seed(b"br", b"\x1b\x03\x00\xf8"))
    write(t, "unsupported-compress", d_seed(b"compress", TEXT[:40]))
    write(t, "br", d_seed(b"br", br(TEXT), chunks=three))
    write(t, "br-window-24", d_seed(b"BR", br(TEXT, 11, 24), step_idx=1))
    write(t, "br-large-window", d_seed(b"br", br(TEXT, 5, 26, large=True)))
    write(t, "br-trailing-junk", d_seed(b"br", br(TEXT) + b"junk"))
    write(t, "br-cut-short", d_seed(b"br", br(TEXT)[:-3], sink_fail=2))
    write(t, "br-bomb", d_seed(b"br", br(b"\0" * (1 << 20), 5, 24), policy=1))
    write(t, "gzip-then-br", d_seed(b"gzip, br", br(gzip(TEXT)), chunks=three))
    write(t, "zstd", d_seed(b"zstd", zstd(TEXT), chunks=three))
    write(t, "zstd-frames", d_seed(b"ZSTD", zstd(TEXT[:100]) + zstd(b"") +
                                   zstd(TEXT[100:], checksum=False), raw=1))
    write(t, "zstd-skippable", d_seed(b"zstd", b"\x50\x2a\x4d\x18\x02\x00\x00"
                                      b"\x00hi" + zstd(TEXT)))
    write(t, "zstd-window-too-large", d_seed(b"zstd", zstd(TEXT, window_log=24)))
    write(t, "zstd-window-8m", d_seed(b"zstd", zstd(TEXT, window_log=23),
                                      sink_fail=1))
    bad = bytearray(zstd(TEXT))
    bad[-1] ^= 1
    write(t, "zstd-bad-checksum", d_seed(b"zstd", bytes(bad), step_idx=0))
    write(t, "zstd-trailing-junk", d_seed(b"zstd", zstd(TEXT) + b"junk"))
    write(t, "zstd-bomb", d_seed(b"zstd", zstd(b"\0" * (1 << 20), 19),
                                 policy=1, chunks=three))
    write(t, "br-then-zstd", d_seed(b"br, zstd", zstd(br(TEXT))))
    write(t, "zstd-gzip-br", d_seed(b"zstd, gzip, br", br(gzip(zstd(TEXT)))))
    write(t, "identity", d_seed(b"identity,", TEXT[:50]))
    write(t, "too-many-codings", d_seed(b"gzip, gzip, gzip, gzip, gzip, gzip",
                                        gzip(TEXT), codings_idx=4))


# ---- fuzz_write: see the layout at the top of fuzz_write.c. ----

K_NONE, K_GZIP, K_XGZIP, K_ZLIB, K_RAW, K_GZIP_DEFLATE, K_TWO_LINES, \
    K_IDENTITY, K_UNKNOWN, K_MEMBERS, K_GZIP_GZIP = range(11)


def w_seed(body, kind=K_NONE, decode=1, fail_at=None, prelude=0, level=6,
           strategy=0, policy=0, cap_mode=2, cap=1 << 20, cl_mode=0,
           raw_mode=0, raw=0, codings_idx=0, chunk=32768, pool=0, repeat=1,
           split=128, chunks=b"\x00", slack=None, attach=0, memory=0, observe=None,
           where=0, code=0):
    """observe: the observe byte (an observer when not None); where and
    code follow it as its bits call for."""
    flags = (decode | (1 if fail_at is not None else 0) << 1 | prelude << 2 |
             (1 if slack is not None else 0) << 4 | attach << 5)
    out = bytes([flags, kind, level | strategy << 4,
                 policy | cap_mode << 2 | cl_mode << 4])
    out += cap.to_bytes({0: 1, 1: 2, 2: 3, 3: 1}[cap_mode], "big")
    out += bytes([raw_mode | codings_idx << 2 | memory << 4 |
                  (1 if observe is not None else 0) << 7])
    out += raw.to_bytes({0: 0, 1: 1, 2: 2, 3: 0}[raw_mode], "big")
    if observe is not None:
        out += bytes([observe])
        verdict, where_mode = observe >> 2 & 3, observe >> 4 & 3
        if verdict:
            out += where.to_bytes(2 if where_mode == 1 else 1, "big")
        if verdict == 2:
            out += bytes([code])
    out += (chunk - 1).to_bytes(2, "big") + bytes([pool])
    if slack is not None:
        out += bytes([slack])
    if fail_at is not None:
        out += fail_at.to_bytes(2, "big")
    out += bytes([repeat - 1, split]) + chunks + body
    return out


def noise(n, seed=1):
    """n bytes that do not compress."""
    out = bytearray()
    x = seed
    for _ in range(n):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        out.append(x >> 16 & 0xFF)
    return bytes(out)


def write_seeds():
    t = "fuzz_write"
    three = b"\x03\x00\x06\x40"
    write(t, "plain-content-length", w_seed(TEXT, cl_mode=1, chunks=three))
    write(t, "gzip-cap-exact", w_seed(TEXT, K_GZIP, cap_mode=3, cap=2, repeat=8))
    write(t, "gzip-cap-minus-one", w_seed(TEXT, K_GZIP, cap_mode=3, cap=1,
                                          repeat=8, chunks=three))
    write(t, "raw-deflate-drain", w_seed(TEXT, K_RAW, policy=1, cap_mode=1,
                                         cap=1000, repeat=4, level=1))
    write(t, "chain-failing-alloc", w_seed(TEXT, K_GZIP_DEFLATE, fail_at=6,
                                           chunk=100, chunks=three))
    write(t, "members-two-lines", w_seed(TEXT, K_MEMBERS, split=40, repeat=3,
                                         chunks=b"\x41\x10"))
    write(t, "two-header-lines", w_seed(TEXT, K_TWO_LINES, codings_idx=3))
    write(t, "reject-too-large", w_seed(TEXT, K_NONE, policy=2, cap_mode=0,
                                        cap=100, cl_mode=1))
    write(t, "redirect-gzip-raw", w_seed(TEXT, K_GZIP, prelude=3, raw_mode=2,
                                         raw=300, cap_mode=1, cap=5000))
    write(t, "redirect-body-then-empty", w_seed(b"", K_NONE, prelude=2))
    write(t, "unsupported-coding", w_seed(TEXT, K_UNKNOWN, cl_mode=4))
    write(t, "budget-chunk-1", w_seed(TEXT, K_ZLIB, chunk=1, pool=0x41,
                                      repeat=20, level=9, strategy=4))
    # Contention for the budget (4 KiB): paused mid-piece, then resumed.
    write(t, "budget-pause-gzip-mid-piece", w_seed(noise(3000), K_GZIP, level=0,
                                                   pool=0x80, slack=40, attach=1,
                                                   raw_mode=2, raw=2000))
    write(t, "budget-pause-plain", w_seed(TEXT, K_NONE, pool=0x80, slack=2,
                                          attach=1, repeat=30, chunk=1024,
                                          chunks=b"\x42\x07\x20"))
    write(t, "budget-timeout-not-attached", w_seed(TEXT, K_NONE, pool=0x40,
                                                   slack=20, repeat=40))
    write(t, "not-decoded-lying-length", w_seed(TEXT, K_XGZIP, decode=0, cl_mode=2,
                                                chunks=three))
    # Body observers. The observe byte: keep NONE, no observer function,
    # verdict (none, stop, fail, stop), where mode (1 byte, 2 bytes, around
    # the expected length, 1 byte * 256), second run (same, keep swapped,
    # no observer, both).
    def obs(none=0, nofn=0, verdict=0, where_mode=0, second=0):
        return (none | nofn << 1 | verdict << 2 | where_mode << 4 |
                second << 6)
    write(t, "observe-plain-keep-none", w_seed(TEXT, cl_mode=1, chunks=three,
                                               observe=obs(none=1)))
    write(t, "observe-gzip-stop-mid", w_seed(TEXT, K_GZIP, repeat=8,
                                             chunks=three,
                                             observe=obs(verdict=1, where_mode=1),
                                             where=1000))
    write(t, "observe-gzip-stop-at-cap", w_seed(TEXT, K_GZIP, cap_mode=3, cap=1,
                                                repeat=8, observe=obs(
                                                    none=1, verdict=1,
                                                    where_mode=2), where=2))
    write(t, "observe-fail-last-byte", w_seed(TEXT, K_NONE, chunks=three,
                                              observe=obs(verdict=2,
                                                          where_mode=2,
                                                          second=1),
                                              where=2, code=6))
    write(t, "observe-past-end", w_seed(TEXT, K_ZLIB, observe=obs(
        verdict=3, where_mode=2, second=2), where=3))
    write(t, "observe-chain-keep-none-drain", w_seed(
        TEXT, K_GZIP_DEFLATE, policy=1, cap_mode=1, cap=1000, repeat=4,
        raw_mode=2, raw=300, observe=obs(none=1, second=3)))
    write(t, "observe-redirect-spill", w_seed(TEXT, K_MEMBERS, prelude=2,
                                              memory=2, repeat=10,
                                              chunks=three, observe=obs(
                                                  verdict=1, where_mode=3),
                                              where=2))
    write(t, "observe-redirect-gzip-keep-none", w_seed(
        TEXT, K_GZIP, prelude=3, raw_mode=2, raw=300, cap_mode=1, cap=5000,
        observe=obs(none=1, verdict=1, where_mode=0), where=100))
    write(t, "observe-failing-alloc", w_seed(TEXT, K_GZIP, fail_at=7, chunk=100,
                                             chunks=three, observe=obs(
                                                 none=1, verdict=1,
                                                 where_mode=0), where=200))
    write(t, "observe-budget-pause", w_seed(noise(3000), K_GZIP, level=0,
                                            pool=0x80, slack=40, attach=1,
                                            observe=obs(verdict=1,
                                                        where_mode=1,
                                                        second=1),
                                            where=2500))
    write(t, "observe-budget-pause-plain", w_seed(TEXT, K_NONE, pool=0x80,
                                                  slack=2, attach=1,
                                                  repeat=30, chunk=1024,
                                                  chunks=b"\x42\x07\x20",
                                                  observe=obs()))
    write(t, "observe-keep-none-no-function", w_seed(
        TEXT, K_GZIP, pool=0x40, slack=20, repeat=40, observe=obs(nofn=1,
                                                                  none=1)))


# ---- fuzz_expr: the expression, a LF, then the body. ----

HTML = (b"<html><title>Admin Panel</title>\n<meta name=generator "
        b"content=\"WordPress 5.8.1\">\nVersion: 5.8.1\n</html>\n")


def expr_seeds():
    t = "fuzz_expr"
    seeds = {
        "dsl-matcher": (b'status_code == 200 && contains(body, "Admin") && '
                        b'!contains(tolower(header), "forbidden")', HTML),
        "atoms-lower": (b'contains_any(tolower(body), "wordpress", "wp-content") || '
                        b'regex("(?i)joomla", body) || contains_all(body, "a", "b")', HTML),
        "favicon-hash": (b'mmh3(base64_py(body)) == "-1277324294"', bytes(range(256)) * 2),
        "versions": (b"compare_versions(trim_space(substr(body, index(body, 0) == '<' ? 0 : 1)), "
                     b"'>= 5.0', '< 6') || compare_versions('1.0.0-rc.1', '~> 1.0')",
                     b"5.8.1"),
        "codings-round-trip": (b"base64_decode(base64(body)) == body && "
                               b"hex_decode(hex_encode(body)) == body && "
                               b"url_decode(url_encode(body, true)) == body && "
                               b"html_unescape(html_escape(body)) == body", HTML),
        "zlib-round-trip": (b"len(zlib_decode(zlib(body))) == len(body) && "
                            b"inflate(deflate(body), 10) == substr(body, 0, 10) && "
                            b"gzip_decode(gzip(body) + gzip(body)) == body + body", HTML),
        "hostile-sizes": (b'repeat(body, 99999999) + padding(body, "x", len(body) * 100000, '
                          b'"prefix")', HTML),
        "regex-backtracking": (b'regex("(a+)+$", body) || body =~ "(a|aa)+$"',
                               b"a" * 3000 + b"!"),
        "ternary-coalesce": (b"status_code > 100 ? to_upper(body) : nothing ?? 'x' + 1 + yes",
                             b"ok"),
        "time-layouts": (b'date_time("%Y-%M-%D", to_unix_time("2022-01-13 16:30:10 +01:00")) '
                         b'== "2022-01-13" && date_time("Mon Jan _2 15:04:05 2006", 0) != ""',
                         b""),
        "strings": (b'join(",", sort(split(body, " "))) + reverse(body) + '
                    b'replace_regex(body, "([a-z]+)", "<$1>") + uniq(body) + '
                    b'trim(body, "<>") + count(body, "a")', b"the quick brown fox"),
        "numbers-bits": (b"hex_to_dec('ff') + oct_to_dec(17) + bin_to_dec('0b1_01') + "
                         b"(6 & 3 | 1 << 4 ^ ~0) - 2 ** 3 % 5 / to_number(body)", b"2.5"),
        "random-shapes": (b'len(rand_base(10, body)) == 10 && rand_int(1, 3) < 3 && '
                          b'rand_ip("10.0.0.0/8") != ""', b"abc"),
        "syntax-error": (b'contains(body, "x"', HTML),
        "unknown-function": (b"no_such_function(body) && md5()", HTML),
        "in-list": (b"status_code in (200, 301, '404') && [content_type] == 'text/html'",
                    b""),
    }
    for name, (src, body) in seeds.items():
        write(t, name, src + b"\n" + body)


if __name__ == "__main__":
    headers_seeds()
    decode_seeds()
    write_seeds()
    expr_seeds()
