/* h2mix: a scanner's mixed HTTP/2 targets, served by the nginx fixture
 * (test/h2.h) over TLS on loopback, for test/bench/h2-scan-mix.sh.
 *
 *   h2mix DIR N
 *
 * starts nginx, adds to what it serves br- and zstd-coded bodies of the
 * test pattern and two bombs, and writes into DIR:
 *
 *   targets.txt    N URLs, one a line, cycling through the mix below
 *                  (each with its own ?n= query, so every line is its own
 *                  target): bodies of 1 KiB to 8 MiB, plain, br and zstd,
 *                  bombs (64 MiB of zeros, br and zstd, cut at scan's
 *                  default --max-body of 8 MiB) and 404s
 *   expected.tsv   what scan must report of each target, one line each
 *                  in the order of targets.txt: url, status_code,
 *                  body_bytes, truncated, failed, tab-separated (the
 *                  columns of jq's @tsv over scan's JSON lines)
 *
 * then prints "ready" on stdout and serves until its standard input ends.
 * Exit status 1 if anything fails (the reason on stderr). */
#include "../h2.h"
#include "../server.h"

#include <brotli/encode.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define MiB      ((size_t)1 << 20)
#define MAX_BODY (8 * MiB)  /* scan's default --max-body */
#define BOMB     (64 * MiB) /* zeros, decoded */

/* One kind of target: its path, and the body it decodes to (bytes; a bomb
 * is cut at MAX_BODY); status 404 for a path nothing serves. */
typedef struct {
  const char *path;
  size_t body;
  int status;
} kind;

/* The mix, cycled through in order: of every 20 targets 7 small (1 KiB,
 * 100 KiB), 4 of 1 MiB, 2 of 8 MiB, 3 coded (br, zstd), 2 bombs, 2 404s. */
static const kind MIX[] = {
    {"/p/1k", 1024, 200},       {"/p/100k", 102400, 200},   {"/p/1k", 1024, 200},
    {"/p/1m", MiB, 200},        {"/br/1m", MiB, 200},       {"/nothing", 0, 404},
    {"/p/1k", 1024, 200},       {"/p/8m", 8 * MiB, 200},    {"/p/100k", 102400, 200},
    {"/zst/1m", MiB, 200},      {"/br/bomb", MAX_BODY, 200}, {"/p/1k", 1024, 200},
    {"/p/1m", MiB, 200},        {"/zst/8m", 8 * MiB, 200},  {"/p/100k", 102400, 200},
    {"/zst/bomb", MAX_BODY, 200}, {"/nothing", 0, 404},     {"/p/1k", 1024, 200},
    {"/br/8m", 8 * MiB, 200},   {"/p/1m", MiB, 200},
};
#define NMIX (sizeof MIX / sizeof MIX[0])

static int put_file(const char *root, const char *name, const void *data, size_t n)
{
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", root, name);
  FILE *f = fopen(path, "wb");
  int ok = f && fwrite(data, 1, n, f) == n;
  if (f && fclose(f) != 0)
    ok = 0;
  if (!ok)
    perror(path);
  return ok ? 0 : -1;
}

/* Writes in (n bytes) br-coded to root/br/name and zstd-coded to
 * root/zst/name. */
static int put_coded(const char *root, const char *name, const unsigned char *in, size_t n)
{
  size_t cap = BrotliEncoderMaxCompressedSize(n), zcap = ZSTD_compressBound(n);
  unsigned char *out = malloc(cap > zcap ? cap : zcap);
  if (!out)
    return -1;
  char file[64];
  size_t len = cap;
  int rc = -1;
  if (BrotliEncoderCompress(5, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_GENERIC, n, in, &len, out)) {
    snprintf(file, sizeof file, "br/%s", name);
    rc = put_file(root, file, out, len);
  }
  len = ZSTD_compress(out, zcap, in, n, 3);
  if (rc == 0 && !ZSTD_isError(len)) {
    snprintf(file, sizeof file, "zst/%s", name);
    rc = put_file(root, file, out, len);
  }
  free(out);
  return rc;
}

/* The 404 page's length, as nginx sends it: fetched once. */
static size_t body_len_cb(char *p, size_t size, size_t n, void *ud)
{
  (void)p;
  *(size_t *)ud += size * n;
  return size * n;
}

static long not_found_len(const h2_server *h2)
{
  char url[256];
  h2_url(h2, "/nothing", url, sizeof url);
  CURL *easy = curl_easy_init();
  size_t len = 0;
  long status = 0;
  if (!easy)
    return -1;
  h2_easy_setup(h2, easy);
  curl_easy_setopt(easy, CURLOPT_URL, url);
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, body_len_cb);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, &len);
  CURLcode cc = curl_easy_perform(easy);
  curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(easy);
  return cc == CURLE_OK && status == 404 ? (long)len : -1;
}

static int write_lists(const char *dir, const h2_server *h2, long n, long not_found)
{
  char path[1024], url[256];
  snprintf(path, sizeof path, "%s/targets.txt", dir);
  FILE *t = fopen(path, "w");
  snprintf(path, sizeof path, "%s/expected.tsv", dir);
  FILE *e = fopen(path, "w");
  for (long i = 0; t && e && i < n; i++) {
    const kind *k = &MIX[(size_t)i % NMIX];
    char with_query[128];
    snprintf(with_query, sizeof with_query, "%s?n=%ld", k->path, i);
    h2_url(h2, with_query, url, sizeof url);
    size_t body = k->status == 404 ? (size_t)not_found : k->body;
    fprintf(t, "%s\n", url);
    fprintf(e, "%s\t%d\t%zu\t%s\tfalse\n", url, k->status, body,
            k->status == 200 && strstr(k->path, "bomb") ? "true" : "false");
  }
  int ok = t && e && !ferror(t) && !ferror(e);
  if (t && fclose(t) != 0)
    ok = 0;
  if (e && fclose(e) != 0)
    ok = 0;
  if (!ok)
    perror(dir);
  return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
  long n = argc == 3 ? strtol(argv[2], NULL, 10) : 0;
  if (n <= 0) {
    fprintf(stderr, "usage: h2mix DIR N\n");
    return 2;
  }
  curl_global_init(CURL_GLOBAL_ALL);
  h2_server *h2 = h2_start();
  char root[1024];
  unsigned char *pat = malloc(8 * MiB), *zeros = calloc(1, BOMB);
  int rc = !h2 || !pat || !zeros || h2_docroot(h2, root, sizeof root) != 0;
  if (!rc) {
    ts_pattern_fill(pat, 0, 8 * MiB);
    rc = put_coded(root, "1m", pat, MiB) || put_coded(root, "8m", pat, 8 * MiB) ||
         put_coded(root, "bomb", zeros, BOMB);
  }
  free(pat);
  free(zeros);
  long not_found = rc ? -1 : not_found_len(h2);
  if (!rc && (not_found < 0 || write_lists(argv[1], h2, n, not_found) != 0))
    rc = 1;
  if (!rc) {
    printf("ready\n");
    fflush(stdout);
    while (getchar() != EOF)
      ;
  }
  h2_stop(h2);
  curl_global_cleanup();
  return rc ? 1 : 0;
}
