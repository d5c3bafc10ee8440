/* The DSL's compression through zlib: gzip, zlib and deflate (raw) make
 * streams that zlib, Go and any other reader decode (the bytes are zlib's,
 * not Go's); gzip_decode, zlib_decode and inflate read them back, at most
 * their optional limit or else the DSL's 10 MB, and never more than
 * env.max_len: output past the limit is left out, as the DSL's reader
 * stops there; concatenated gzip members are read on. gzip_mtime gives
 * the member's modification time. zip(name, content, ...) makes a ZIP
 * archive of those files, laid out as Go's archive/zip writes them
 * (deflated, each followed by a data descriptor, no times), the deflated
 * bytes being zlib's. */
#include "expr-int.h"

#include <string.h>
#include <zlib.h>

#define S(v) (v).u.str.ptr, (v).u.str.len

#define DEFAULT_LIMIT (10 * 1024 * 1024) /* the DSL's DefaultMaxDecompressionSize */
#define GZIP_BITS (16 + MAX_WBITS)

/* a compressed in the format of zlib's window bits. */
static expr_code compress_bits(expr_ctx *c, const expr_value *a, int bits, expr_value *out)
{
  expr_value s;
  expr_code rc = expr__str(c, a, &s);
  if (rc != EXPR_OK)
    return rc;
  z_stream z;
  memset(&z, 0, sizeof z);
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, bits, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return expr__fail(c, EXPR_E_NOMEM, "out of memory");
  uLong bound = deflateBound(&z, (uLong)s.u.str.len) + 32;
  char *p = bound <= c->max_len ? expr__alloc(c, bound) : NULL;
  if (!p) {
    deflateEnd(&z);
    return bound > c->max_len ? expr__fail(c, EXPR_E_LIMIT, "compressed value too large")
                              : c->err->code;
  }
  z.next_in = (Bytef *)(uintptr_t)s.u.str.ptr;
  z.avail_in = (uInt)s.u.str.len;
  z.next_out = (Bytef *)p;
  z.avail_out = (uInt)bound;
  int r = deflate(&z, Z_FINISH);
  size_t len = bound - z.avail_out;
  deflateEnd(&z);
  if (r != Z_STREAM_END)
    return expr__fail(c, EXPR_E_VALUE, "compression failed");
  *out = expr_str(p, len);
  return EXPR_OK;
}


/* gzip, zlib, deflate: the mode is zlib's window bits for the format. */
static expr_code fn_compress(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  (void)n;
  return compress_bits(c, a, expr__mode(c), out);
}

/* The limit argument, as the DSL reads it (an unreadable one is the
 * default), within max_len. */
static size_t read_limit(expr_ctx *c, const expr_value *a, size_t n)
{
  long long v;
  size_t limit = DEFAULT_LIMIT;
  if (n > 1 && expr__to_int(&a[1], &v))
    limit = v < 0 ? 0 : (unsigned long long)v > SIZE_MAX ? SIZE_MAX : (size_t)v;
  return limit < c->max_len ? limit : c->max_len;
}

/* gzip_decode, zlib_decode, inflate: the mode as for fn_compress. */
static expr_code fn_decompress(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  int bits = expr__mode(c);
  expr_value s;
  expr_code rc = expr__str(c, &a[0], &s);
  if (rc != EXPR_OK)
    return rc;
  size_t limit = read_limit(c, a, n);
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, bits) != Z_OK)
    return expr__fail(c, EXPR_E_NOMEM, "out of memory");
  z.next_in = (Bytef *)(uintptr_t)s.u.str.ptr;
  z.avail_in = (uInt)(s.u.str.len > UINT32_MAX ? UINT32_MAX : s.u.str.len);
  sbuf b;
  sb_init(&b, c);
  unsigned char chunk[16384];
  int r = Z_OK;
  while (b.rc == EXPR_OK && b.len < limit) {
    size_t want = limit - b.len < sizeof chunk ? limit - b.len : sizeof chunk;
    z.next_out = chunk;
    z.avail_out = (uInt)want;
    r = inflate(&z, Z_NO_FLUSH);
    sb_add(&b, chunk, want - z.avail_out);
    if (r == Z_STREAM_END && bits == GZIP_BITS && z.avail_in >= 2 && z.next_in[0] == 0x1f &&
        z.next_in[1] == 0x8b) {
      inflateReset(&z); /* the next member */
      continue;
    }
    if (r != Z_OK)
      break;
  }
  inflateEnd(&z);
  if (b.rc == EXPR_OK && b.len < limit && r != Z_STREAM_END) {
    sbuf drop = b;
    sb_done(&drop, out);
    return expr__fail(c, EXPR_E_VALUE, "not a %s stream",
                      bits == GZIP_BITS ? "gzip" : bits > 0 ? "zlib" : "deflate");
  }
  return sb_done(&b, out);
}


static expr_code fn_gzip_mtime(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  (void)n;
  expr_value s;
  expr_code rc = expr__str(c, a, &s);
  if (rc != EXPR_OK)
    return rc;
  const unsigned char *p = (const unsigned char *)s.u.str.ptr;
  if (s.u.str.len < 10 || p[0] != 0x1f || p[1] != 0x8b || p[2] != 8)
    return expr__fail(c, EXPR_E_VALUE, "gzip_mtime: not a gzip header");
  uint32_t t = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
  *out = expr_num((double)t);
  return EXPR_OK;
}

static void le(sbuf *b, uint32_t v, int bytes)
{
  for (int i = 0; i < bytes; i++, v >>= 8)
    sb_addc(b, (char)(v & 0xff));
}

/* A ZIP header's signature and the fields after it: versions, flags (a
 * data descriptor follows), method 8 (deflate), time and date 0. */
static void zip_head(sbuf *b, uint32_t sig, int central)
{
  le(b, sig, 4);
  if (central)
    le(b, 20, 2); /* made by */
  le(b, 20, 2);   /* needed */
  le(b, 8, 2);
  le(b, 8, 2);
  le(b, 0, 4);
}

typedef struct zip_entry {
  uint32_t crc, csize, usize, offset;
} zip_entry;

/* The local header, data and descriptor of the file name, content. */
static void zip_file(sbuf *b, const expr_value *name, const expr_value *content,
                     const expr_value *data, zip_entry *z)
{
  z->offset = (uint32_t)b->len;
  z->crc = (uint32_t)crc32(0, (const Bytef *)content->u.str.ptr, (uInt)content->u.str.len);
  z->csize = (uint32_t)data->u.str.len;
  z->usize = (uint32_t)content->u.str.len;
  zip_head(b, 0x04034b50, 0);
  le(b, 0, 4); /* crc and sizes: in the descriptor */
  le(b, 0, 4);
  le(b, 0, 4);
  le(b, (uint32_t)name->u.str.len, 2);
  le(b, 0, 2);
  sb_add(b, S(*name));
  sb_add(b, S(*data));
  le(b, 0x08074b50, 4);
  le(b, z->crc, 4);
  le(b, z->csize, 4);
  le(b, z->usize, 4);
}

static void zip_central(sbuf *b, const expr_value *name, const zip_entry *z)
{
  zip_head(b, 0x02014b50, 1);
  le(b, z->crc, 4);
  le(b, z->csize, 4);
  le(b, z->usize, 4);
  le(b, (uint32_t)name->u.str.len, 2);
  le(b, 0, 4); /* extra, comment */
  le(b, 0, 4); /* disk, internal attributes */
  le(b, 0, 4); /* external attributes */
  le(b, z->offset, 4);
  sb_add(b, S(*name));
}

static expr_code fn_zip(expr_ctx *c, const expr_value *a, size_t n, expr_value *out)
{
  if (n % 2)
    return expr__fail(c, EXPR_E_VALUE, "zip: pairs of name and content");
  for (size_t i = 0; i < n; i++)
    if (a[i].type != EXPR_STR || a[i].u.str.len > 0xffff)
      return expr__fail(c, EXPR_E_VALUE, "zip: names and contents are strings (of 64 KiB)");
  zip_entry *e = (zip_entry *)(void *)expr__alloc(c, n / 2 * sizeof *e);
  if (!e)
    return c->err->code;
  sbuf b;
  sb_init(&b, c);
  for (size_t i = 0; i < n && b.rc == EXPR_OK; i += 2) {
    expr_value data;
    if ((b.rc = compress_bits(c, &a[i + 1], -MAX_WBITS, &data)) == EXPR_OK)
      zip_file(&b, &a[i], &a[i + 1], &data, &e[i / 2]);
  }
  uint32_t cd = (uint32_t)b.len;
  for (size_t i = 0; i < n && b.rc == EXPR_OK; i += 2)
    zip_central(&b, &a[i], &e[i / 2]);
  uint32_t cd_len = (uint32_t)b.len - cd;
  le(&b, 0x06054b50, 4);
  le(&b, 0, 4);
  le(&b, (uint32_t)n / 2, 2);
  le(&b, (uint32_t)n / 2, 2);
  le(&b, cd_len, 4);
  le(&b, cd, 4);
  le(&b, 0, 2);
  return sb_done(&b, out);
}

const expr_fn expr__fn_zlib[] = {
    {"gzip", 1, 1, fn_compress, GZIP_BITS},
    {"gzip_decode", 1, 2, fn_decompress, GZIP_BITS},
    {"gzip_mtime", 1, 1, fn_gzip_mtime, 0},
    {"zlib", 1, 1, fn_compress, MAX_WBITS},
    {"zlib_decode", 1, 2, fn_decompress, MAX_WBITS},
    {"deflate", 1, 1, fn_compress, -MAX_WBITS},
    {"inflate", 1, 2, fn_decompress, -MAX_WBITS},
    {"zip", 2, -1, fn_zip, 0},
    {NULL, 0, 0, NULL, 0},
};
