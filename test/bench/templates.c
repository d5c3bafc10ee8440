/* bench-templates: matcher throughput of templates clustered on one
 * request, on one thread, without transfers (issue 27, scenario b).
 *
 *   bench-templates [--matchers N] [--mb MB] [--runs R] [--dir DIR]
 *
 * N matchers (default 1000: seven in ten words, a third of those
 * case-insensitive, three in ten regexes, as nuclei templates mix them;
 * a few occur in the bodies) run over HTML/JS-like bodies (generated,
 * MB MiB in all, default 16; or the files of DIR), two ways:
 *   scan's way: one Vectorscan streaming database of all of them
 *     (HS_FLAG_SINGLEMATCH; words as literals, (?i) where caseless), as
 *     scan -t builds it, a stream per body fed 16 KiB slices as curl
 *     delivers them;
 *   nuclei's way: each matcher over the whole kept body, one after the
 *     other: memmem per word, the body lower-cased again for each
 *     case-insensitive word, PCRE2-JIT per regex twice (nuclei's
 *     MatchString, then FindAllString).
 * Both give a verdict per body and matcher; they must be the same. The
 * best of R runs (default 3) of each is reported, in GB/s of thread CPU
 * time, and the ratio. Exit status: 0, or 1 when the verdicts differ or
 * setup fails. Built with -Dbench=true where libhs is found. */
#define _GNU_SOURCE /* memmem */
#include <ctype.h>
#include <dirent.h>
#include <hs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#define SLICE (16 * 1024)
#define MiB   (1024.0 * 1024.0)

static const char *const DICT[] = {
    "jquery", "react",  "angular", "bootstrap", "wordpress", "drupal", "joomla", "nginx",
    "apache", "tomcat", "jenkins", "grafana",   "kibana",    "gitlab", "django", "laravel",
    "spring", "struts", "express", "next",      "nuxt",      "vue",    "ember",  "backbone",
    "lodash", "moment", "axios",   "webpack",   "vite",      "babel",  "sentry", "stripe"};
#define NDICT (sizeof DICT / sizeof DICT[0])

typedef struct matcher {
  int regex, nocase;
  char text[96];    /* the word (lower case when nocase) or the regex */
  pcre2_code *code; /* regex */
} matcher;

typedef struct body {
  char *p;
  size_t len;
} body;

static unsigned long rng = 88172645463325252UL;
static unsigned long next(void)
{
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* Matcher i: mostly absent, one in 40 made to occur in the bodies. */
static void make_matcher(matcher *m, size_t i)
{
  const char *w = DICT[i % NDICT], *v = DICT[(i / NDICT) % NDICT];
  int present = i % 40 == 0;
  m->regex = i % 10 >= 7;
  m->nocase = !m->regex && i % 3 == 0;
  if (m->regex)
    snprintf(m->text, sizeof m->text, present ? "%s[-_]v?[0-9]+\\.[0-9]+" : "%s-%s[0-9]{2,4}x%zu",
             w, v, i);
  else
    snprintf(m->text, sizeof m->text, present ? "/%s.min.js" : "%s-%s-fp%zu", w, v, i);
}

/* An HTML page with scripts, of about size bytes, into b. */
static void make_body(body *b, size_t size)
{
  b->p = malloc(size + 256);
  b->len = 0;
  while (b->p && b->len < size) {
    const char *w = DICT[next() % NDICT];
    unsigned long r = next();
    int n;
    switch (r % 6) {
    case 0:
      n = sprintf(b->p + b->len, "<script src=\"/js/%s.min.js?v=%lu\"></script>\n", w, r % 997);
      break;
    case 1:
      n = sprintf(b->p + b->len,
                  "<div class=\"%s-card col-%lu\"><p>%s Lorem ipsum dolor</p></div>\n", w, r % 12,
                  w);
      break;
    case 2:
      n = sprintf(b->p + b->len, "var %s_%lu = {\"version\":\"%s_%lu.%lu\",\"ok\":true};\n", w,
                  r % 100, w, r % 9, r % 31);
      break;
    case 3:
      n = sprintf(b->p + b->len, "<a href=\"/%s/page/%lu\">%s docs</a>\n", w, r % 5000, w);
      break;
    case 4:
      n = sprintf(b->p + b->len, "function %s%lu(a,b){return a.%s(b)||null}\n", w, r % 50, w);
      break;
    default:
      n = sprintf(b->p + b->len, "<meta name=\"generator\" content=\"%s %lu.%lu\">\n", w, r % 7,
                  r % 20);
      break;
    }
    b->len += (size_t)n;
  }
}

static double cpu_now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- scan's way --------------------------------------------------------- */

static int on_match(unsigned id, unsigned long long from, unsigned long long to, unsigned flags,
                    void *ctx)
{
  (void)from, (void)to, (void)flags;
  ((unsigned char *)ctx)[id] = 1;
  return 0;
}

static hs_database_t *compile_all(const matcher *m, size_t n)
{
  const char **exprs = calloc(n, sizeof *exprs);
  unsigned *flags = calloc(n, sizeof *flags), *ids = calloc(n, sizeof *ids);
  char **texts = calloc(n, sizeof *texts);
  hs_database_t *db = NULL;
  for (size_t i = 0; exprs && flags && ids && texts && i < n; i++) {
    size_t len = strlen(m[i].text);
    if (!(texts[i] = malloc(4 * len + 8)))
      goto out;
    if (m[i].regex) {
      strcpy(texts[i], m[i].text);
    } else { /* a literal, each byte as \xHH, as scan-vs.c writes words */
      strcpy(texts[i], m[i].nocase ? "(?i)" : "");
      for (size_t k = 0; k < len; k++)
        sprintf(texts[i] + strlen(texts[i]), "\\x%02x", (unsigned char)m[i].text[k]);
    }
    exprs[i] = texts[i];
    flags[i] = HS_FLAG_SINGLEMATCH;
    ids[i] = (unsigned)i;
  }
  hs_compile_error_t *err = NULL;
  if (hs_compile_multi(exprs, flags, ids, (unsigned)n, HS_MODE_STREAM, NULL, &db, &err) !=
      HS_SUCCESS) {
    fprintf(stderr, "bench-templates: hs_compile_multi: %s\n", err ? err->message : "?");
    hs_free_compile_error(err);
    db = NULL;
  }
out:
  for (size_t i = 0; texts && i < n; i++)
    free(texts[i]);
  free(texts);
  free(exprs);
  free(flags);
  free(ids);
  return db;
}

static int scan_way(hs_database_t *db, hs_scratch_t *scratch, const body *b, unsigned char *hit)
{
  hs_stream_t *st;
  if (hs_open_stream(db, 0, &st) != HS_SUCCESS)
    return -1;
  for (size_t at = 0; at < b->len; at += SLICE) {
    size_t n = b->len - at < SLICE ? b->len - at : SLICE;
    if (hs_scan_stream(st, b->p + at, (unsigned)n, 0, scratch, on_match, hit) != HS_SUCCESS)
      return -1;
  }
  return hs_close_stream(st, scratch, on_match, hit) == HS_SUCCESS ? 0 : -1;
}

/* ---- nuclei's way ------------------------------------------------------- */

static void nuclei_way(const matcher *m, size_t n, const body *b, pcre2_match_data *md,
                       unsigned char *hit)
{
  for (size_t i = 0; i < n; i++) {
    if (m[i].regex) { /* MatchString, then FindAllString */
      int rc = pcre2_match(m[i].code, (PCRE2_SPTR)b->p, b->len, 0, 0, md, NULL);
      hit[i] = rc > 0;
      for (size_t at = 0; rc > 0;) {
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        at = ov[1] > ov[0] ? ov[1] : ov[1] + 1;
        rc = at <= b->len ? pcre2_match(m[i].code, (PCRE2_SPTR)b->p, b->len, at, 0, md, NULL) : -1;
      }
    } else if (m[i].nocase) { /* strings.ToLower of the whole body, each time */
      char *low = malloc(b->len);
      for (size_t k = 0; low && k < b->len; k++)
        low[k] = (char)tolower((unsigned char)b->p[k]);
      hit[i] = low && memmem(low, b->len, m[i].text, strlen(m[i].text)) != NULL;
      free(low);
    } else {
      hit[i] = memmem(b->p, b->len, m[i].text, strlen(m[i].text)) != NULL;
    }
  }
}

/* ---- The run ------------------------------------------------------------ */

/* The files of dir as bodies (at most max of them); 0 when none. */
static size_t read_dir(const char *dir, body *out, size_t max)
{
  DIR *d = opendir(dir);
  size_t n = 0;
  struct dirent *e;
  while (d && n < max && (e = readdir(d)) != NULL) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = e->d_name[0] != '.' ? fopen(path, "rb") : NULL;
    if (!f)
      continue;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    rewind(f);
    out[n].p = len > 0 ? malloc((size_t)len) : NULL;
    if (out[n].p && fread(out[n].p, 1, (size_t)len, f) == (size_t)len)
      out[n++].len = (size_t)len;
    fclose(f);
  }
  if (d)
    closedir(d);
  return n;
}

static int setup_matchers(matcher *m, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    make_matcher(&m[i], i);
    if (!m[i].regex)
      continue;
    int err;
    PCRE2_SIZE at;
    m[i].code = pcre2_compile((PCRE2_SPTR)m[i].text, PCRE2_ZERO_TERMINATED, 0, &err, &at, NULL);
    if (!m[i].code || pcre2_jit_compile(m[i].code, PCRE2_JIT_COMPLETE) != 0)
      return -1;
  }
  return 0;
}

/* Both ways over every body, runs times: the best CPU seconds of each,
 * the hits of scan's way, and the count of verdicts that differ (SIZE_MAX:
 * a stream failed). */
static size_t measure(hs_database_t *db, hs_scratch_t *scratch, const matcher *m, size_t nm,
                      const body *b, size_t nb, pcre2_match_data *md, size_t runs,
                      double *best_ours, double *best_theirs, size_t *hits)
{
  unsigned char *ours = calloc(nm + 1, 1), *theirs = calloc(nm + 1, 1);
  size_t differ = ours && theirs ? 0 : SIZE_MAX;
  *best_ours = *best_theirs = 1e30;
  *hits = 0;
  for (size_t r = 0; r < runs && differ != SIZE_MAX; r++) {
    double t_ours = 0, t_theirs = 0;
    for (size_t i = 0; i < nb && differ != SIZE_MAX; i++) {
      memset(ours, 0, nm);
      double t0 = cpu_now();
      if (scan_way(db, scratch, &b[i], ours) != 0)
        differ = SIZE_MAX;
      t_ours += cpu_now() - t0;
      t0 = cpu_now();
      nuclei_way(m, nm, &b[i], md, theirs);
      t_theirs += cpu_now() - t0;
      for (size_t k = 0; k < nm && differ != SIZE_MAX; k++) {
        differ += ours[k] != theirs[k];
        *hits += r == 0 && ours[k];
      }
    }
    *best_ours = t_ours < *best_ours ? t_ours : *best_ours;
    *best_theirs = t_theirs < *best_theirs ? t_theirs : *best_theirs;
  }
  free(ours);
  free(theirs);
  return differ;
}

int main(int argc, char **argv)
{
  size_t nm = 1000, mb = 16, runs = 3;
  const char *dir = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--matchers"))
      nm = strtoul(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--mb"))
      mb = strtoul(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--runs"))
      runs = strtoul(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--dir"))
      dir = argv[i + 1];
  }
  size_t cap = dir ? 100000 : mb * 4 + 1, nb = 0;
  body *b = calloc(cap, sizeof *b);
  matcher *m = calloc(nm + 1, sizeof *m);
  if (!b || !m || !nm || setup_matchers(m, nm) != 0) {
    fputs("bench-templates: setup failed\n", stderr);
    return 1;
  }
  if (dir)
    nb = read_dir(dir, b, cap);
  else
    for (; nb < mb * 4; nb++) /* 256 KiB pages */
      make_body(&b[nb], 256 * 1024);
  size_t total = 0;
  for (size_t i = 0; i < nb; i++)
    total += b[i].len;
  hs_database_t *db = compile_all(m, nm);
  hs_scratch_t *scratch = NULL;
  pcre2_match_data *md = pcre2_match_data_create(4, NULL);
  if (!nb || !db || hs_alloc_scratch(db, &scratch) != HS_SUCCESS || !md) {
    fputs("bench-templates: setup failed (no bodies, or a database)\n", stderr);
    return 1;
  }
  double best_ours, best_theirs;
  size_t hits,
      differ = measure(db, scratch, m, nm, b, nb, md, runs, &best_ours, &best_theirs, &hits);
  if (differ == SIZE_MAX) {
    fputs("bench-templates: a stream failed\n", stderr);
    return 1;
  }
  printf("bench-templates: %zu matchers over %zu bodies, %.1f MiB, one thread, best of %zu\n", nm,
         nb, (double)total / MiB, runs);
  printf("  scan's way (Vectorscan stream, one database): %.3f GB/s (%.3f s)\n",
         (double)total / best_ours / 1e9, best_ours);
  printf("  nuclei's way (memmem, lower-casing, PCRE2-JIT twice per matcher): %.4f GB/s (%.3f s)\n",
         (double)total / best_theirs / 1e9, best_theirs);
  printf("  ratio %.1fx; %zu hits (body x matcher); %zu verdicts differ\n", best_theirs / best_ours,
         hits, differ);
  hs_free_scratch(scratch);
  hs_free_database(db);
  pcre2_match_data_free(md);
  for (size_t i = 0; i < nm; i++)
    pcre2_code_free(m[i].code);
  for (size_t i = 0; i < nb; i++)
    free(b[i].p);
  free(b);
  free(m);
  return differ ? 1 : 0;
}
