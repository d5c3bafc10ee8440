/* Unit tests of spilling: bodies past max_memory (or refused by the budget)
 * go to an unlinked temporary file and read back as one view, through the
 * callbacks as curl drives them, in many chunkings. */
#include <check.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "shelf.h"
#include "util.h"

#define KiB ((size_t)1024)
#define MiB (1024 * KiB)
#define MEM (64 * KiB) /* max_memory in these tests */

static const size_t chunkings[] = {1, 7, 16384, 0};
#define NCHUNKINGS (sizeof chunkings / sizeof chunkings[0])

static const char *const plain[] = {"HTTP/1.1 200 OK\r\n", "\r\n", NULL};

static rc_response *spilling_response(rc_pool *p, size_t max_memory, size_t max_body)
{
  rc_limits lim;
  rc_limits_init(&lim);
  lim.max_memory = max_memory;
  if (max_body)
    lim.max_body = max_body;
  rc_response *r;
  ck_assert_int_eq(rc_response_new(p, &lim, &r), RC_OK);
  return r;
}

static char *pattern(size_t n, unsigned seed)
{
  char *b = malloc(n ? n : 1);
  fill_pattern(b, n, seed);
  return b;
}

/* The body reads back whole through the view, the copy and the full
 * response. */
static void assert_body(rc_response *r, const char *want, size_t n)
{
  rc_view v = rc_body(r);
  ck_assert_uint_eq(v.len, n);
  ck_assert(memcmp(v.ptr, want, n) == 0);
  ck_assert_int_eq(v.ptr[n], '\0');
  size_t len;
  char *dup = rc_body_dup(r, &len);
  ck_assert_uint_eq(len, n);
  ck_assert(memcmp(dup, want, n) == 0);
  free(dup);
  rc_view full;
  rc_hop_info hop;
  ck_assert_int_eq(rc_full_response(r, &full), RC_OK);
  ck_assert_int_eq(rc_hop(r, -1, &hop), RC_OK);
  ck_assert_uint_eq(full.len, hop.raw.len + n);
  ck_assert(memcmp(full.ptr + hop.raw.len, want, n) == 0);
  ck_assert_int_eq(full.ptr[full.len], '\0');
}

/* Around the boundary and far past it, with and without a declared size:
 * the body spills exactly when it is longer than max_memory. */
START_TEST(boundary_every_chunking)
{
  const size_t sizes[] = {MEM - 1, MEM, MEM + 1, 5 * MEM + 3};
  rc_pool *p;
  ck_assert_int_eq(rc_pool_new(NULL, &p), RC_OK);
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    size_t n = sizes[i];
    char *body = pattern(n, (unsigned)i);
    char cl[64];
    snprintf(cl, sizeof cl, "Content-Length: %zu\r\n", n);
    const char *const declared[] = {"HTTP/1.1 200 OK\r\n", cl, "\r\n", NULL};
    for (size_t c = 0; c < NCHUNKINGS; c++) {
      for (int d = 0; d < 2; d++) {
        rc_response *r = spilling_response(p, MEM, 0);
        ck_assert_uint_eq(feed(r, d ? declared : plain, body, n, chunkings[c]), 0);
        ck_assert_int_eq(rc_result(r, CURLE_OK), RC_OK);
        ck_assert_int_eq(rc_body_spilled(r), n > MEM);
        assert_body(r, body, n);
        rc_response_free(r);
      }
    }
    free(body);
  }
  ck_assert_uint_eq(pool_stats(p).bytes_in_use, 0);
  ck_assert_uint_eq(pool_stats(p).spills, 2 * 2 * NCHUNKINGS);
  rc_pool_free(p);
}
END_TEST

/* A declared size over max_memory goes to the file from the first byte:
 * no memory is taken for the body at all. */
START_TEST(declared_over_memory_takes_no_memory)
{
  size_t n = 1 * MiB;
  char *body = pattern(n, 3);
  const char *const lines[] = {"HTTP/1.1 200 OK\r\n", "Content-Length: 1048576\r\n", "\r\n", NULL};
  rc_pool *p;
  ck_assert_int_eq(rc_pool_new(NULL, &p), RC_OK);
  rc_response *r = spilling_response(p, MEM, 0);
  ck_assert_uint_eq(feed(r, lines, NULL, 0, 0), 0);
  size_t headers = pool_stats(p).bytes_in_use;
  ck_assert_uint_eq(feed(r, NULL, body, n, 16384), 0);
  ck_assert(rc_body_spilled(r));
  ck_assert_uint_eq(pool_stats(p).peak_in_use, headers);
  assert_body(r, body, n);
  rc_response_free(r);
  rc_pool_free(p);
  free(body);
}
END_TEST

/* The body cap falls inside the file part: truncated there, under every
 * policy that keeps reading or stops. */
START_TEST(cap_inside_the_file)
{
  size_t n = 200 * KiB, cap = 100 * KiB + 5;
  char *body = pattern(n, 4);
  for (size_t c = 0; c < NCHUNKINGS; c++) {
    rc_response *r = spilling_response(NULL, MEM, cap);
    size_t ret = feed(r, plain, body, n, chunkings[c]);
    ck_assert_uint_eq(ret, CURL_WRITEFUNC_ERROR); /* RC_CAP_STOP */
    ck_assert_int_eq(rc_result(r, CURLE_WRITE_ERROR), RC_TRUNCATED);
    ck_assert(rc_body_spilled(r));
    assert_body(r, body, cap);
    rc_response_free(r);
  }
  free(body);
}
END_TEST

static void *gzip_of(const char *src, size_t n, size_t *out_len)
{
  z_stream z;
  memset(&z, 0, sizeof z);
  ck_assert_int_eq(deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
  size_t cap = deflateBound(&z, n);
  unsigned char *out = malloc(cap);
  z.next_in = (unsigned char *)src;
  z.avail_in = (uInt)n;
  z.next_out = out;
  z.avail_out = (uInt)cap;
  ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
  *out_len = z.total_out;
  deflateEnd(&z);
  return out;
}

/* Decoded bytes past max_memory go to the file the same way. */
START_TEST(decoded_body_spills)
{
  size_t n = 1 * MiB + 17, gz_len;
  char *body = pattern(n, 5);
  char *gz = gzip_of(body, n, &gz_len);
  const char *const lines[] = {"HTTP/1.1 200 OK\r\n", "Content-Encoding: gzip\r\n", "\r\n", NULL};
  for (size_t c = 0; c < NCHUNKINGS; c++) {
    rc_response *r = spilling_response(NULL, MEM, 0);
    ck_assert_int_eq(rc_response_set_decoding(r, 1), RC_OK);
    ck_assert_uint_eq(feed(r, lines, gz, gz_len, chunkings[c]), 0);
    ck_assert_int_eq(rc_result(r, CURLE_OK), RC_OK);
    ck_assert_int_eq(rc_body_encoding(r), RC_ENC_DECODED);
    ck_assert(rc_body_spilled(r));
    assert_body(r, body, n);
    rc_response_free(r);
  }
  /* And the cap still counts decoded bytes, inside the file. */
  rc_response *r = spilling_response(NULL, MEM, 300 * KiB);
  ck_assert_int_eq(rc_response_set_decoding(r, 1), RC_OK);
  ck_assert_uint_eq(feed(r, lines, gz, gz_len, 0), CURL_WRITEFUNC_ERROR);
  ck_assert_int_eq(rc_result(r, CURLE_WRITE_ERROR), RC_TRUNCATED);
  assert_body(r, body, 300 * KiB);
  rc_response_free(r);
  free(gz);
  free(body);
}
END_TEST

/* No directory to spill to: RC_E_SPILL, and what fitted in memory stays. */
START_TEST(no_spill_directory)
{
  rc_pool_config cfg;
  rc_pool_config_init(&cfg);
  cfg.spill_dir = "/nonexistent/respchain-test";
  rc_pool *p;
  ck_assert_int_eq(rc_pool_new(&cfg, &p), RC_OK);
  rc_pool_config got;
  rc_pool_config_get(p, &got);
  ck_assert_str_eq(got.spill_dir, "/nonexistent/respchain-test");
  ck_assert_ptr_ne(got.spill_dir, cfg.spill_dir); /* the pool's own copy */
  size_t n = 3 * MEM;
  char *body = pattern(n, 6);
  rc_response *r = spilling_response(p, MEM, 0);
  ck_assert_uint_eq(feed(r, plain, body, n, 1000), CURL_WRITEFUNC_ERROR);
  ck_assert_int_eq(rc_result(r, CURLE_WRITE_ERROR), RC_E_SPILL);
  ck_assert(!rc_body_spilled(r));
  rc_view v = rc_body(r);
  ck_assert_uint_le(v.len, MEM);
  ck_assert_uint_gt(v.len, MEM - 1000);
  ck_assert(memcmp(v.ptr, body, v.len) == 0);
  rc_response_free(r);
  rc_pool_free(p);
  free(body);
}
END_TEST

/* The disk fills up (a file size limit stands in for it: a small tmpfs
 * needs privileges): RC_E_SPILL, and the bytes the file took read back. */
START_TEST(no_space_left)
{
  struct rlimit old, small = {200 * KiB, 200 * KiB};
  ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
  small.rlim_max = old.rlim_max;
  void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN); /* EFBIG instead */
  ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &small), 0);
  size_t n = 1 * MiB;
  char *body = pattern(n, 7);
  rc_response *r = spilling_response(NULL, MEM, 0);
  size_t ret = feed(r, plain, body, n, 16384);
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, old_handler);
  ck_assert_uint_eq(ret, CURL_WRITEFUNC_ERROR);
  ck_assert_int_eq(rc_result(r, CURLE_WRITE_ERROR), RC_E_SPILL);
  ck_assert(rc_body_spilled(r));
  rc_view v = rc_body(r);
  ck_assert_uint_le(v.len, 200 * KiB - 1); /* one byte is kept for the NUL */
  ck_assert_uint_ge(v.len, 200 * KiB - 16384);
  ck_assert(memcmp(v.ptr, body, v.len) == 0);
  ck_assert_int_eq(v.ptr[v.len], '\0');
  rc_response_free(r);
  free(body);
}
END_TEST

/* Sets the file size limit (SIGXFSZ ignored: writes past it fail with
 * EFBIG); restore_file_size puts the old one back. */
static struct rlimit old_fsize;
static void (*old_xfsz)(int);

static void limit_file_size(rlim_t bytes)
{
  ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old_fsize), 0);
  struct rlimit small = {bytes, old_fsize.rlim_max};
  old_xfsz = signal(SIGXFSZ, SIG_IGN);
  ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &small), 0);
}

static void restore_file_size(void)
{
  setrlimit(RLIMIT_FSIZE, &old_fsize);
  signal(SIGXFSZ, old_xfsz);
}

/* The file can take every byte of the body but not the one past it that
 * terminates the view. The last batch is written when the body is known
 * complete: at its declared length or the end of its coding, the transfer
 * fails there with RC_E_SPILL; with neither (no Content-Length), at the
 * first read, and rc_result finds it. Either way the body is what the file
 * took but for the NUL's place, readable, never a body no view can show.
 * One byte less and it is readable whole. */
START_TEST(file_full_at_the_body_end)
{
  size_t n = 1 * MiB, gz_len[2];
  char *body = pattern(n, 14);
  char *gz[2] = {gzip_of(body, n, &gz_len[0]), gzip_of(body, n - 1, &gz_len[1])};
  const char *const coded[] = {"HTTP/1.1 200 OK\r\n", "Content-Encoding: gzip\r\n", "\r\n", NULL};
  const char *const sized[2][3] = {{"HTTP/1.1 200 OK\r\n", "Content-Length: 1048576\r\n", "\r\n"},
                                   {"HTTP/1.1 200 OK\r\n", "Content-Length: 1048575\r\n", "\r\n"}};
  const size_t chunks[] = {16384, 0};
  limit_file_size(n);
  enum { UNSIZED, SIZED, GZIP };
  for (int kind = UNSIZED; kind <= GZIP; kind++) {
    for (size_t c = 0; c < 2; c++) {
      for (size_t less = 0; less < 2; less++) {
        rc_response *r = spilling_response(NULL, MEM, 0);
        ck_assert_int_eq(rc_response_set_decoding(r, kind == GZIP), RC_OK);
        const char *const lines[] = {sized[less][0], sized[less][1], sized[less][2], NULL};
        size_t ret = kind == GZIP    ? feed(r, coded, gz[less], gz_len[less], chunks[c])
                     : kind == SIZED ? feed(r, lines, body, n - less, chunks[c])
                                     : feed(r, plain, body, n - less, chunks[c]);
        ck_assert(rc_body_spilled(r));
        if (less) {
          ck_assert_uint_eq(ret, 0);
          ck_assert_int_eq(rc_result(r, CURLE_OK), RC_OK);
          assert_body(r, body, n - 1);
        } else {
          CURLcode cc = CURLE_OK;
          if (kind == UNSIZED) {
            ck_assert_uint_eq(ret, 0);
            ck_assert_uint_eq(rc_body_length(r), n); /* not all written yet */
          } else {
            ck_assert_uint_eq(ret, CURL_WRITEFUNC_ERROR);
            cc = CURLE_WRITE_ERROR;
          }
          ck_assert_int_eq(rc_result(r, cc), RC_E_SPILL);
          ck_assert_int_eq(rc_result(r, cc), RC_E_SPILL); /* and stays so */
          rc_view v = rc_body(r);
          ck_assert_uint_eq(v.len, n - 1);
          ck_assert_uint_eq(rc_body_length(r), n - 1);
          ck_assert(memcmp(v.ptr, body, v.len) == 0);
          ck_assert_int_eq(v.ptr[v.len], '\0');
          size_t len;
          char *dup = rc_body_dup(r, &len);
          ck_assert_uint_eq(len, n - 1);
          free(dup);
        }
        rc_response_free(r);
      }
    }
  }
  restore_file_size();
  free(gz[0]);
  free(gz[1]);
  free(body);
}
END_TEST

/* The process's address space in use now (VmSize), in bytes. */
static rlim_t address_space_in_use(void)
{
  FILE *f = fopen("/proc/self/status", "r");
  ck_assert_ptr_nonnull(f);
  char line[256];
  unsigned long long kib = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmSize: %llu kB", &kib) == 1)
      break;
  fclose(f);
  ck_assert_uint_gt(kib, 0);
  return (rlim_t)kib * 1024;
}

/* A complete spilled body that cannot be mapped (no address space left for
 * it) is told apart from an empty one: rc_result says RC_E_NOMEM instead of
 * RC_OK, rc_body is empty and the copies fail. With room again, it reads
 * back whole. */
START_TEST(unmappable_body_is_reported)
{
  size_t n = 4 * MiB;
  char *body = pattern(n, 15);
  rc_response *r = spilling_response(NULL, MEM, 0);
  ck_assert_uint_eq(feed(r, plain, body, n, 65536), 0);
  ck_assert(rc_body_spilled(r));
  rc_view full;
  struct rlimit old, tight;
  ck_assert_int_eq(getrlimit(RLIMIT_AS, &old), 0);
  tight.rlim_cur = address_space_in_use() + n / 4;
  tight.rlim_max = old.rlim_max;
  /* Nothing below allocates until the limit is lifted again. */
  ck_assert_int_eq(setrlimit(RLIMIT_AS, &tight), 0);
  rc_code result = rc_result(r, CURLE_OK);
  rc_view v = rc_body(r);
  char *dup = rc_body_dup(r, NULL);
  rc_code full_rc = rc_full_response(r, &full);
  setrlimit(RLIMIT_AS, &old);
  ck_assert_int_eq(result, RC_E_NOMEM);
  ck_assert_uint_eq(v.len, 0);
  ck_assert_str_eq(v.ptr, "");
  ck_assert_ptr_null(dup);
  ck_assert_int_eq(full_rc, RC_E_NOMEM);
  ck_assert_int_eq(rc_result(r, CURLE_OK), RC_OK);
  assert_body(r, body, n);
  rc_response_free(r);
  free(body);
}
END_TEST

static int open_fds(void)
{
  DIR *d = opendir("/proc/self/fd");
  ck_assert_ptr_nonnull(d);
  int n = 0;
  while (readdir(d))
    n++;
  closedir(d);
  return n;
}

/* An empty spill_dir is the default location, as an empty $TMPDIR is:
 * $TMPDIR when set, else /tmp; never the current or the root directory. */
START_TEST(empty_spill_dir_is_the_default)
{
  char tmpl[] = "/tmp/respchain-spill-XXXXXX";
  char *dir = mkdtemp(tmpl);
  ck_assert_ptr_nonnull(dir);
  const char *old = getenv("TMPDIR");
  char *saved = old ? strdup(old) : NULL;
  rc_pool_config cfg;
  rc_pool_config_init(&cfg);
  cfg.spill_dir = "";
  rc_pool *p;
  ck_assert_int_eq(rc_pool_new(&cfg, &p), RC_OK);
  size_t n = 2 * MEM;
  char *body = pattern(n, 16);
  for (int env = 0; env < 3; env++) {
    const char *where = env == 0 ? dir : "/tmp";
    if (env == 0)
      setenv("TMPDIR", dir, 1);
    else if (env == 1)
      setenv("TMPDIR", "", 1);
    else
      unsetenv("TMPDIR");
    rc_pool_trim(p); /* a kept file stays where it was made */
    int before = fds_open_in(where), in_root = fds_open_in("");
    rc_response *r = spilling_response(p, MEM, 0);
    ck_assert_uint_eq(feed(r, plain, body, n, 0), 0);
    ck_assert_int_eq(rc_result(r, CURLE_OK), RC_OK);
    ck_assert(rc_body_spilled(r));
    ck_assert_int_eq(fds_open_in(where), before + 1);
    ck_assert_int_eq(fds_open_in(""), in_root); /* nothing in / itself */
    assert_body(r, body, n);
    rc_response_free(r);
  }
  if (saved)
    setenv("TMPDIR", saved, 1);
  else
    unsetenv("TMPDIR");
  free(saved);
  rc_pool_free(p);
  free(body);
  ck_assert_int_eq(rmdir(dir), 0); /* and nothing was left in it */
}
END_TEST

/* With a pool that keeps no idle file (max_large 0), the file is open
 * while the body lives in it, and nowhere else: a reset, a new hop and free
 * each close it. Reuse after a spill starts in memory. */
START_TEST(descriptor_lifetime)
{
  size_t n = 2 * MEM;
  char *body = pattern(n, 8);
  int before = open_fds();
  rc_pool_config cfg;
  rc_pool_config_init(&cfg);
  cfg.max_large = 0;
  rc_pool *p;
  ck_assert_int_eq(rc_pool_new(&cfg, &p), RC_OK);
  rc_response *r = spilling_response(p, MEM, 0);
  ck_assert_uint_eq(feed(r, plain, body, n, 0), 0);
  ck_assert_int_eq(open_fds(), before + 1);
  rc_response_reset(r);
  ck_assert_int_eq(open_fds(), before);
  ck_assert_uint_eq(feed(r, plain, "small", 5, 0), 0);
  ck_assert(!rc_body_spilled(r));
  assert_body(r, "small", 5);
  rc_response_reset(r);

  /* A redirect's body spills; the final hop's body starts over. */
  const char *const hop[] = {"HTTP/1.1 302 Found\r\n", "Location: /x\r\n", "\r\n", NULL};
  ck_assert_uint_eq(feed(r, hop, body, n, 0), 0);
  ck_assert(rc_body_spilled(r));
  ck_assert_uint_eq(feed(r, plain, body, 10, 0), 0);
  ck_assert(!rc_body_spilled(r));
  ck_assert_int_eq(open_fds(), before);
  assert_body(r, body, 10);
  ck_assert_uint_eq(feed(r, NULL, body + 10, n - 10, 0), 0);
  ck_assert_int_eq(open_fds(), before + 1);
  rc_response_free(r);
  ck_assert_int_eq(open_fds(), before);
  rc_pool_free(p);
  free(body);
}
END_TEST

/* A pool keeps the file of a body that is done with it, and the next spill
 * writes over it: shorter or longer than the body before, it reads back
 * exact, NUL-terminated, none of the old bytes in view. Two bodies spilled
 * at once have a file each. rc_pool_trim and rc_pool_free close the kept
 * ones, and so does a max_buffer below a file's size. */
START_TEST(files_are_kept_and_reused)
{
  size_t n = 12 * MEM;
  char *body[3] = {pattern(n, 31), pattern(n, 32), pattern(n, 33)};
  const size_t sizes[] = {n, 3 * MEM, n - 1, 5 * MEM + 7, n};
  int before = open_fds();
  rc_pool *p;
  ck_assert_int_eq(rc_pool_new(NULL, &p), RC_OK);
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    rc_response *r = spilling_response(p, MEM, 0);
    const char *want = body[i % 3];
    ck_assert_uint_eq(feed(r, plain, want, sizes[i], 16384), 0);
    ck_assert(rc_body_spilled(r));
    ck_assert_int_eq(open_fds(), before + 1); /* the kept file, or a new one */
    ck_assert_int_eq(rc_result(r, CURLE_OK), RC_OK);
    assert_body(r, want, sizes[i]);
    rc_response_free(r);
    ck_assert_int_eq(open_fds(), before + 1); /* kept */
  }
  ck_assert_uint_eq(pool_stats(p).spills, 5);

  /* Two at once: the kept file and a new one; both kept after. */
  rc_response *a = spilling_response(p, MEM, 0), *b = spilling_response(p, MEM, 0);
  ck_assert_uint_eq(feed(a, plain, body[0], n, 16384), 0);
  ck_assert_uint_eq(feed(b, plain, body[1], n, 16384), 0);
  ck_assert_int_eq(open_fds(), before + 2);
  assert_body(a, body[0], n);
  assert_body(b, body[1], n);
  rc_response_free(a);
  rc_response_free(b);
  ck_assert_int_eq(open_fds(), before + 2);
  rc_pool_trim(p);
  ck_assert_int_eq(open_fds(), before);

  /* A file larger than max_buffer is closed when given back (its size
   * once read: the last batch is written then). */
  ck_assert_int_eq(rc_pool_set_max_buffer(p, 4 * MEM), RC_OK);
  rc_response *r = spilling_response(p, MEM, 0);
  ck_assert_uint_eq(feed(r, plain, body[2], 4 * MEM, 0), 0); /* 4 MEM + 1 bytes */
  assert_body(r, body[2], 4 * MEM);
  rc_response_free(r);
  ck_assert_int_eq(open_fds(), before);
  r = spilling_response(p, MEM, 0);
  ck_assert_uint_eq(feed(r, plain, body[2], 4 * MEM - 1, 0), 0);
  assert_body(r, body[2], 4 * MEM - 1);
  rc_response_free(r);
  ck_assert_int_eq(open_fds(), before + 1);
  /* Lowering max_buffer closes a kept file it no longer allows. */
  ck_assert_int_eq(rc_pool_set_max_buffer(p, MEM), RC_OK);
  ck_assert_int_eq(open_fds(), before);

  r = spilling_response(p, MEM, 0);
  ck_assert_uint_eq(feed(r, plain, body[2], 2 * MEM, 0), 0);
  assert_body(r, body[2], 2 * MEM);
  ck_assert_int_eq(rc_pool_set_max_buffer(p, n), RC_OK);
  rc_response_free(r);
  ck_assert_int_eq(open_fds(), before + 1);
  rc_pool_free(p);
  ck_assert_int_eq(open_fds(), before);
  for (int i = 0; i < 3; i++)
    free(body[i]);
}
END_TEST

/* Bodies spilling at once gather their bytes in 256 KiB batches while
 * fewer than 64 are lent, in 16 KiB ones past that: the memory of batches
 * stays near 16 MiB however many spill. A batch given back (at the body's
 * first read, here) is lent again. Small batches or big, the bodies read
 * back exact. */
START_TEST(batches_are_bounded)
{
  enum { N = 100, BIG = 64 };
  size_t n = 2 * MEM + 7;
  char *body = pattern(n, 35);
  counting_alloc ca;
  counting_alloc_init(&ca);
  rc_pool *p = pool_with(&ca, 0);
  rc_response *r[N];
  for (int i = 0; i < N; i++) {
    r[i] = spilling_response(p, MEM, 0);
    ck_assert_uint_eq(feed(r[i], plain, NULL, 0, 0), 0);
  }
  rc_pool_trim(p);
  size_t before = ca.live_bytes;
  for (int i = 0; i < N; i++) {
    ck_assert_uint_eq(feed(r[i], NULL, body, n, 16384), 0); /* no end known: batch kept */
    ck_assert(rc_body_spilled(r[i]));
  }
  rc_pool_trim(p); /* the memory the bodies left for their files */
  /* Less the shelf's entry of each file, made with the file. */
  size_t batches = ca.live_bytes - before - N * sizeof(rc__shelved);
  ck_assert_uint_le(batches, BIG * 256 * KiB + (N - BIG) * 16 * KiB);
  ck_assert_uint_ge(batches, BIG * 256 * KiB);
  for (int i = 0; i < N; i++)
    ck_assert_int_eq(rc_result(r[i], CURLE_OK), RC_OK); /* writes the batch out, frees it */
  rc_pool_trim(p);
  ck_assert_uint_eq(ca.live_bytes, before + N * sizeof(rc__shelved)); /* the files' entries */
  for (int i = 0; i < N; i++)
    assert_body(r[i], body, n);
  /* All given back: the next ones have big batches again. */
  for (int i = 0; i < N; i++)
    rc_response_reset(r[i]);
  rc_pool_trim(p);
  before = ca.live_bytes;
  for (int i = 0; i < BIG; i++)
    ck_assert_uint_eq(feed(r[i], plain, body, n, 16384), 0);
  rc_pool_trim(p);
  batches = ca.live_bytes - before; /* with the header blocks fed again */
  ck_assert_uint_ge(batches, BIG * 256 * KiB);
  ck_assert_uint_lt(batches, BIG * (256 + 16) * KiB);
  for (int i = 0; i < N; i++)
    rc_response_free(r[i]);
  rc_pool_free(p);
  ck_assert_int_eq(ca.live, 0);
  free(body);
}
END_TEST

/* Kept files follow demand down to none once spilling stops: the program's
 * own calls (rc_pool_stats_get; buffers given back) let it decay. */
START_TEST(kept_files_decay)
{
  size_t n = 4 * MEM;
  char *body = pattern(n, 34);
  int before = open_fds();
  rc_pool *p;
  ck_assert_int_eq(rc_pool_new(NULL, &p), RC_OK);
  enum { K = 4 };
  /* Driven by rc_pool_stats_get, then by small bodies in memory alone:
   * each buffer given back lets the files decay too. */
  for (int by_buffers = 0; by_buffers < 2; by_buffers++) {
    rc_response *r[K];
    for (int i = 0; i < K; i++) {
      r[i] = spilling_response(p, MEM, 0);
      ck_assert_uint_eq(feed(r[i], plain, body, n, 0), 0);
    }
    for (int i = 0; i < K; i++)
      rc_response_free(r[i]);
    ck_assert_int_eq(open_fds(), before + K);
    /* Half-life 250 ms: well under 10 s for four. No timing is asserted. */
    for (int i = 0; i < 1000 && open_fds() > before; i++) {
      nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
      if (!by_buffers) {
        pool_stats(p);
        continue;
      }
      rc_response *small = spilling_response(p, MEM, 0);
      ck_assert_uint_eq(feed(small, plain, body, 100, 0), 0);
      ck_assert(!rc_body_spilled(small));
      rc_response_free(small);
    }
    ck_assert_int_eq(open_fds(), before);
  }
  rc_pool_free(p);
  free(body);
}
END_TEST

/* Views of a spilled body are mapped again once more data arrived; one
 * mapping serves any number of reads in between. */
START_TEST(view_follows_writes)
{
  size_t n = 4 * MEM;
  char *body = pattern(n, 9);
  rc_response *r = spilling_response(NULL, MEM, 0);
  ck_assert_uint_eq(feed(r, plain, body, 2 * MEM, 0), 0);
  rc_view a = rc_body(r), b = rc_body(r);
  ck_assert_ptr_eq(a.ptr, b.ptr);
  ck_assert_uint_eq(a.len, 2 * MEM);
  ck_assert_uint_eq(feed(r, NULL, body + 2 * MEM, 2 * MEM, 0), 0);
  assert_body(r, body, n);
  rc_response_free(r);
  free(body);
}
END_TEST

typedef struct reader {
  rc_response *r;
  const char *want;
  size_t n;
  const char *seen;
  int ok;
} reader;

static void *read_body(void *arg)
{
  reader *rd = arg;
  rc_view v = rc_body(rd->r);
  rd->seen = v.ptr;
  rd->ok = v.len == rd->n && memcmp(v.ptr, rd->want, rd->n) == 0 && v.ptr[rd->n] == '\0';
  return NULL;
}

/* Many threads read a spilled body at once: one mapping, the same bytes. */
START_TEST(threads_read_the_mapping)
{
  size_t n = 8 * MEM + 1;
  char *body = pattern(n, 10);
  rc_response *r = spilling_response(NULL, MEM, 0);
  ck_assert_uint_eq(feed(r, plain, body, n, 0), 0);
  enum { T = 16 };
  pthread_t t[T];
  reader rd[T];
  for (int i = 0; i < T; i++) {
    rd[i] = (reader){r, body, n, NULL, 0};
    ck_assert_int_eq(pthread_create(&t[i], NULL, read_body, &rd[i]), 0);
  }
  for (int i = 0; i < T; i++) {
    pthread_join(t[i], NULL);
    ck_assert(rd[i].ok);
    ck_assert_ptr_eq(rd[i].seen, rd[0].seen);
  }
  rc_response_free(r);
  free(body);
}
END_TEST

/* Every allocation of a decoded, spilled transfer fails in turn: each run
 * ends in RC_E_NOMEM with a prefix of the body, or completes; nothing
 * leaks. */
START_TEST(allocation_failure)
{
  size_t n = 300 * KiB, gz_len;
  char *body = pattern(n, 11);
  char *gz = gzip_of(body, n, &gz_len);
  const char *const lines[] = {"HTTP/1.1 200 OK\r\n", "Content-Encoding: gzip\r\n", "\r\n", NULL};
  int completed = 0;
  for (long fail = 1; !completed && fail < 200; fail++) {
    counting_alloc ca;
    counting_alloc_init(&ca);
    rc_pool *p = pool_with(&ca, 0);
    ca.fail_at = fail;
    rc_response *r;
    rc_limits lim;
    rc_limits_init(&lim);
    lim.max_memory = MEM;
    if (rc_response_new(p, &lim, &r) == RC_OK) {
      rc_response_set_decoding(r, 1);
      size_t ret = feed(r, lines, gz, gz_len, 4096);
      rc_code rc = rc_result(r, ret ? CURLE_WRITE_ERROR : CURLE_OK);
      rc_view v = rc_body(r);
      ck_assert(memcmp(v.ptr, body, v.len) == 0);
      if (rc == RC_OK) {
        ck_assert_uint_eq(v.len, n);
        completed = ca.calls < fail;
      } else {
        ck_assert_int_eq(rc, RC_E_NOMEM);
      }
      rc_response_free(r);
    }
    rc_pool_free(p);
    ck_assert_int_eq(ca.live, 0);
  }
  ck_assert(completed);
  free(gz);
  free(body);
}
END_TEST

/* Under RC_OVERFLOW_SPILL a response refused by the budget spills at once,
 * with or without a curl handle to pause, and the pool stays within it. */
START_TEST(budget_spill_mode)
{
  rc_pool_config cfg;
  rc_pool_config_init(&cfg);
  cfg.budget = 256 * KiB;
  cfg.overflow = RC_OVERFLOW_SPILL;
  size_t n = 1 * MiB;
  char *body = pattern(n, 12);
  CURL *easy = curl_easy_init();
  for (int attached = 0; attached < 2; attached++) {
    rc_pool *p;
    ck_assert_int_eq(rc_pool_new(&cfg, &p), RC_OK);
    rc_response *r = new_response(p, 0, RC_CAP_STOP);
    if (attached)
      ck_assert_int_eq(rc_attach(r, easy), RC_OK); /* never performed */
    ck_assert_uint_eq(feed(r, plain, body, n, 16384), 0);
    ck_assert(rc_body_spilled(r));
    /* Within the budget (the full response below is exempt, so look now). */
    ck_assert_uint_le(pool_stats(p).peak_in_use, cfg.budget);
    assert_body(r, body, n);
    rc_response_free(r);
    rc_pool_stats st = pool_stats(p);
    ck_assert_uint_eq(st.pauses, 0);
    ck_assert_uint_eq(st.spills, 1);
    rc_pool_free(p);
  }
  curl_easy_cleanup(easy);
  free(body);
}
END_TEST

static Suite *spill_suite(void)
{
  Suite *s = suite_create("spill");
  TCase *tc = tcase_create("spill");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, boundary_every_chunking);
  tcase_add_test(tc, declared_over_memory_takes_no_memory);
  tcase_add_test(tc, cap_inside_the_file);
  tcase_add_test(tc, decoded_body_spills);
  tcase_add_test(tc, no_spill_directory);
  tcase_add_test(tc, empty_spill_dir_is_the_default);
  tcase_add_test(tc, no_space_left);
  tcase_add_test(tc, file_full_at_the_body_end);
  tcase_add_test(tc, unmappable_body_is_reported);
  tcase_add_test(tc, descriptor_lifetime);
  tcase_add_test(tc, files_are_kept_and_reused);
  tcase_add_test(tc, kept_files_decay);
  tcase_add_test(tc, batches_are_bounded);
  tcase_add_test(tc, view_follows_writes);
  tcase_add_test(tc, threads_read_the_mapping);
  tcase_add_test(tc, allocation_failure);
  tcase_add_test(tc, budget_spill_mode);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return run_suite(spill_suite()); }
