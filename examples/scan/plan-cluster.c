/* scan's template requests: the distinct requests the loaded templates
 * make (a cluster per request: templates whose requests are the same,
 * variables and all, share it, so each target gets it once), the URL of
 * one for a target, and the jobs the loop runs: each target, each
 * cluster. */
#include "scan-tpl.h"

#include <stdlib.h>
#include <string.h>

static int same(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

/* Whether the path of request q is cluster c's request. */
static int same_request(const cluster *c, const tpl_request *q, const char *path)
{
  if (strcmp(c->method, q->method) || strcmp(c->path, path) || !same(c->body, q->body) ||
      c->redirects != q->redirects || (q->redirects && c->max_redirs != q->max_redirs) ||
      c->nheaders != q->nheaders)
    return 0;
  for (size_t i = 0; i < q->nheaders; i++)
    if (strcmp(c->headers[i], q->headers[i]))
      return 0;
  return 1;
}

/* Whether request q needs the body kept: an extractor of the body (its
 * matchers of the body run on the stream, or over a body kept for the
 * regexes the stream does not take: see tpl_options). */
static int needs_body(const tpl_request *q)
{
  for (size_t i = 0; i < q->nextractors; i++)
    if (!q->extractors[i].kval && q->extractors[i].part != TP_HEADER &&
        q->extractors[i].part != TP_NAMED)
      return 1;
  return 0;
}

/* Adds member (t, q) to the cluster of path, made when new. 0 or -1. */
static int join(templates *ts, size_t t, size_t q, const char *path, size_t *cap)
{
  const tpl_request *r = &ts->t[t].reqs[q];
  size_t i = 0;
  while (i < ts->nclusters && !same_request(&ts->c[i], r, path))
    i++;
  if (i == ts->nclusters) {
    if (ts->nclusters == *cap) {
      cluster *g = realloc(ts->c, (*cap = *cap ? 2 * *cap : 64) * sizeof *g);
      if (!g)
        return -1;
      ts->c = g;
    }
    cluster *c = &ts->c[ts->nclusters++];
    memset(c, 0, sizeof *c);
    c->method = r->method;
    c->path = path;
    c->body = r->body;
    c->headers = r->headers;
    c->nheaders = r->nheaders;
    c->redirects = r->redirects;
    c->max_redirs = r->redirects ? r->max_redirs : 0;
  }
  cluster *c = &ts->c[i];
  tpl_member *g = realloc(c->members, (c->nmembers + 1) * sizeof *g);
  if (!g)
    return -1;
  c->members = g;
  c->members[c->nmembers++] = (tpl_member){t, q};
  c->keep_body |= needs_body(r);
  return 0;
}

int tpl_cluster(templates *ts, const options *o)
{
  size_t cap = 0;
  /* The same random letters wherever {{randstr}} appears in this scan, so
   * that it does not keep requests apart. */
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  unsigned long x = (unsigned long)now.tv_nsec ^ (unsigned long)now.tv_sec * 2654435761UL;
  for (size_t i = 0; i + 1 < sizeof ts->randstr; i++, x = x * 6364136223846793005UL + 1)
    ts->randstr[i] = (char)('a' + (x >> 33) % 26);
  for (size_t t = 0; t < ts->n; t++)
    for (size_t q = 0; q < ts->t[t].nreqs; q++)
      for (size_t p = 0; p < ts->t[t].reqs[q].npaths; p++)
        if (join(ts, t, q, ts->t[t].reqs[q].paths[p], &cap) != 0)
          return -1;
  (void)o;
  return 0;
}

/* ---- Variables ---------------------------------------------------------- */

/* The parts of a target URL that the variables name. */
typedef struct url_parts {
  char *scheme, *host, *port, *path;
} url_parts;

static int split_url(const char *target, url_parts *u)
{
  CURLU *h = curl_url();
  memset(u, 0, sizeof *u);
  int ok = h && curl_url_set(h, CURLUPART_URL, target, CURLU_DEFAULT_SCHEME) == CURLUE_OK &&
           curl_url_get(h, CURLUPART_SCHEME, &u->scheme, 0) == CURLUE_OK &&
           curl_url_get(h, CURLUPART_HOST, &u->host, 0) == CURLUE_OK &&
           curl_url_get(h, CURLUPART_PORT, &u->port, CURLU_DEFAULT_PORT) == CURLUE_OK &&
           curl_url_get(h, CURLUPART_PATH, &u->path, 0) == CURLUE_OK;
  curl_url_cleanup(h);
  return ok ? 0 : -1;
}

static void free_parts(url_parts *u)
{
  curl_free(u->scheme);
  curl_free(u->host);
  curl_free(u->port);
  curl_free(u->path);
}

/* The value of variable name (n bytes) for target, into l. */
static void variable(line *l, const templates *ts, const char *name, size_t n, const char *target,
                     const url_parts *u)
{
  size_t tlen = strlen(target);
  int std_port = (!strcmp(u->scheme, "http") && !strcmp(u->port, "80")) ||
                 (!strcmp(u->scheme, "https") && !strcmp(u->port, "443"));
#define IS(s) (n == sizeof s - 1 && !strncmp(name, s, n))
  if (IS("BaseURL")) /* the target as given, without a final slash */
    put(l, target, tlen && target[tlen - 1] == '/' ? tlen - 1 : tlen);
  else if (IS("RootURL"))
    printf_line(l, "%s://%s%s%s", u->scheme, u->host, std_port ? "" : ":", std_port ? "" : u->port);
  else if (IS("Hostname"))
    printf_line(l, "%s%s%s", u->host, std_port ? "" : ":", std_port ? "" : u->port);
  else if (IS("Host"))
    puts_line(l, u->host);
  else if (IS("Port"))
    puts_line(l, u->port);
  else if (IS("Path"))
    puts_line(l, strcmp(u->path, "/") ? u->path : "");
  else if (IS("Scheme"))
    puts_line(l, u->scheme);
  else if (IS("randstr"))
    puts_line(l, ts->randstr);
#undef IS
}

/* text with its variables replaced, into l. */
static void expand(line *l, const templates *ts, const char *text, const char *target,
                   const url_parts *u)
{
  const char *p = text, *v;
  while ((v = strstr(p, "{{")) != NULL) {
    const char *end = strstr(v + 2, "}}");
    if (!end)
      break;
    put(l, p, (size_t)(v - p));
    variable(l, ts, v + 2, (size_t)(end - v - 2), target, u);
    p = end + 2;
  }
  puts_line(l, p);
}

char *tpl_url(const templates *ts, const cluster *c, const char *target)
{
  url_parts u;
  line l = {0};
  if (split_url(target, &u) == 0)
    expand(&l, ts, c->path, target, &u);
  free_parts(&u);
  if (l.nomem || !l.p) {
    free(l.p);
    return NULL;
  }
  put(&l, "", 1);
  return l.p;
}

/* ---- Requests and jobs -------------------------------------------------- */

/* text with its variables for target replaced, new; NULL when out of
 * memory. */
static char *expanded(const templates *ts, const char *text, const char *target, const url_parts *u)
{
  line l = {0};
  expand(&l, ts, text, target, u);
  put(&l, "", 1);
  if (l.nomem)
    free(l.p);
  return l.nomem ? NULL : l.p;
}

/* Cluster c's headers (after -H) and body for target, into *job. */
static int job_request(const templates *ts, const cluster *c, const options *o, const char *target,
                       tpl_job *job)
{
  url_parts u;
  int ok = split_url(target, &u) == 0;
  for (const struct curl_slist *h = o->headers; ok && h; h = h->next)
    ok = (job->headers = curl_slist_append(job->headers, h->data)) != NULL;
  for (size_t k = 0; ok && k < c->nheaders; k++) {
    char *h = expanded(ts, c->headers[k], target, &u);
    ok = h && (job->headers = curl_slist_append(job->headers, h)) != NULL;
    free(h);
  }
  if (ok && c->body)
    ok = (job->body = expanded(ts, c->body, target, &u)) != NULL;
  free_parts(&u);
  return ok ? 0 : -1;
}

void tpl_job_free(tpl_job *job)
{
  curl_slist_free_all(job->headers);
  free(job->body);
  job->headers = NULL;
  job->body = NULL;
}

int tpl_set_request(CURL *e, const templates *ts, const cluster *c, const options *o,
                    const char *target, tpl_job *job)
{
  long redirs = c->redirects ? c->max_redirs : 0;
  tpl_job_free(job);
  if (job_request(ts, c, o, target, job) != 0)
    return -1;
  int ok = curl_easy_setopt(e, CURLOPT_HTTPGET, 1L) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_NOBODY, 0L) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, (char *)NULL) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_HTTPHEADER, job->headers) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, redirs > 0 ? 1L : 0L) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_MAXREDIRS, redirs) == CURLE_OK;
  if (ok && job->body)
    ok = curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(job->body)) ==
             CURLE_OK &&
         curl_easy_setopt(e, CURLOPT_POSTFIELDS, job->body) == CURLE_OK;
  if (ok && !strcmp(c->method, "HEAD"))
    ok = curl_easy_setopt(e, CURLOPT_NOBODY, 1L) == CURLE_OK;
  else if (ok && strcmp(c->method, c->body ? "POST" : "GET") != 0)
    ok = curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, c->method) == CURLE_OK;
  return ok ? 0 : -1;
}

char *tpl_next_job(templates *ts, targets *src, size_t *cl, unsigned long *seq, char **target)
{
  for (;;) {
    if (!ts->target || ts->next_cluster == ts->nclusters) {
      free(ts->target);
      ts->next_cluster = 0;
      if (!ts->nclusters || !(ts->target = next_target(src)))
        return NULL;
      ts->seq++;
    }
    size_t i = ts->next_cluster++;
    char *url = tpl_url(ts, &ts->c[i], ts->target);
    if (!url) /* not a URL: no job of this target can run */
      ts->next_cluster = ts->nclusters;
    char *t = url ? strdup(ts->target) : NULL;
    if (!url)
      continue;
    if (!t) {
      free(url);
      return NULL;
    }
    *cl = i;
    *seq = ts->seq;
    *target = t;
    return url;
  }
}

/* ---- Reports ------------------------------------------------------------ */

/* A skip's reason without its detail: what the counts group by. */
static size_t reason_kind(const char *reason) { return strcspn(reason, ":"); }

/* The skips' counts by reason kind, each line prefixed. */
static void skip_counts(FILE *out, const templates *ts, const char *prefix)
{
  for (size_t i = 0; i < ts->nskips; i++) {
    const char *r = ts->skips[i].reason;
    size_t k = reason_kind(r), n = 0, j = 0;
    while (j < i && (reason_kind(ts->skips[j].reason) != k || strncmp(ts->skips[j].reason, r, k)))
      j++;
    if (j < i)
      continue; /* counted with its first */
    for (j = i; j < ts->nskips; j++)
      n += reason_kind(ts->skips[j].reason) == k && !strncmp(ts->skips[j].reason, r, k);
    fprintf(out, "%sskipped %zu: %.*s\n", prefix, n, (int)k, r);
  }
}

void tpl_print_validation(const templates *ts)
{
  for (size_t i = 0; i < ts->nskips; i++)
    printf("skipped %s: %s\n", ts->skips[i].file, ts->skips[i].reason);
  printf("templates: %zu loaded, %zu skipped; %zu clusters\n", ts->n, ts->nskips, ts->nclusters);
  skip_counts(stdout, ts, "");
}

void tpl_summary(const templates *ts, unsigned long requests)
{
  fprintf(stderr,
          "scan: templates: %zu loaded, %zu skipped; %zu clusters, %lu requests, %lu matches\n",
          ts->n, ts->nskips, ts->nclusters, requests, ts->matches);
  skip_counts(stderr, ts, "scan: templates: ");
}

/* ---- The matchers of the body ------------------------------------------- */

/* The id of value i of body matcher m among out's matchers, added when
 * new. */
static size_t pattern_id(options *out, const tpl_matcher *m, size_t i)
{
  if (m->type == TM_WORD) {
    for (size_t k = 0; k < out->nwords; k++)
      if (out->word_nocase[k] == m->nocase && !strcmp(out->words[k], m->words[i]))
        return k;
    out->word_nocase[out->nwords] = (unsigned char)m->nocase;
    out->words[out->nwords] = m->words[i];
    return out->nwords++;
  }
  for (size_t k = 0; k < out->nregexes; k++)
    if (!strcmp(out->regexes[k].text, m->regexes[i].text))
      return k;
  out->regexes[out->nregexes] = m->regexes[i]; /* shared: freed with the template */
  return out->nregexes++;
}

/* The words and the regexes of the body of m (its subs too), counted. */
static void count_values(const tpl_matcher *m, size_t *words, size_t *regexes)
{
  for (size_t i = 0; m->type == TM_DSL && i < m->n; i++)
    count_values(&m->subs[i], words, regexes);
  if ((m->part == TP_BODY || m->part == TP_ALL) && m->type == TM_WORD)
    *words += m->n;
  if ((m->part == TP_BODY || m->part == TP_ALL) && m->type == TM_REGEX)
    *regexes += m->n;
}

/* The ids of m's values of the body (its subs' too) among out's. Regex
 * ids count from 0 here; shift_ids adds the words' count. 0 or -1. */
static int assign_ids(options *out, tpl_matcher *m)
{
  for (size_t i = 0; m->type == TM_DSL && i < m->n; i++)
    if (assign_ids(out, &m->subs[i]) != 0)
      return -1;
  if ((m->part != TP_BODY && m->part != TP_ALL) || (m->type != TM_WORD && m->type != TM_REGEX))
    return 0;
  if (!(m->ids = calloc(m->n, sizeof *m->ids)))
    return -1;
  for (size_t k = 0; k < m->n; k++)
    m->ids[k] = pattern_id(out, m, k);
  return 0;
}

/* The regexes' ids follow the words' (scan.h). */
static void shift_ids(tpl_matcher *m, size_t nwords)
{
  for (size_t i = 0; m->type == TM_DSL && i < m->n; i++)
    shift_ids(&m->subs[i], nwords);
  for (size_t k = 0; m->ids && m->type == TM_REGEX && k < m->n; k++)
    m->ids[k] += nwords;
}

/* Runs body with m each matcher of the templates. */
#define EACH_MATCHER(ts, m, body)                                                                  \
  for (size_t t_ = 0; t_ < (ts)->n; t_++)                                                          \
    for (size_t q_ = 0; q_ < (ts)->t[t_].nreqs; q_++)                                              \
      for (size_t i_ = 0; i_ < (ts)->t[t_].reqs[q_].nmatchers; i_++) {                             \
        tpl_matcher *m = &(ts)->t[t_].reqs[q_].matchers[i_];                                       \
        body;                                                                                      \
      }

int tpl_options(templates *ts, const options *o, options *out)
{
  size_t nw = 0, nr = 0;
  EACH_MATCHER(ts, m, count_values(m, &nw, &nr));
  *out = *o;
  out->words = calloc(nw + 1, sizeof *out->words);
  out->word_nocase = calloc(nw + 1, 1);
  out->regexes = calloc(nr + 1, sizeof *out->regexes);
  out->nwords = out->nregexes = out->nextracts = 0;
  out->part = PART_BODY;
  out->stop_on_match = 0;
  if (!out->words || !out->word_nocase || !out->regexes)
    return -1;
  EACH_MATCHER(ts, m, if (assign_ids(out, m) != 0) return -1);
  EACH_MATCHER(ts, m, shift_ids(m, out->nwords));
  return 0;
}

/* Marks m's body values (its subs' too) in mine. */
static void mark_mine(const tpl_matcher *m, unsigned char *mine)
{
  for (size_t i = 0; m->type == TM_DSL && i < m->n; i++)
    mark_mine(&m->subs[i], mine);
  for (size_t k = 0; m->ids && k < m->n; k++)
    mine[m->ids[k]] = 1;
}

/* Whether a value of m (its subs too) runs over the kept body. */
static int unstreamed(const tpl_matcher *m, const unsigned char *streamed)
{
  for (size_t i = 0; m->type == TM_DSL && i < m->n; i++)
    if (unstreamed(&m->subs[i], streamed))
      return 1;
  for (size_t k = 0; m->ids && k < m->n; k++)
    if (!streamed[m->ids[k]])
      return 1;
  return 0;
}

int tpl_keep(templates *ts, const unsigned char *streamed, size_t nids, size_t nslots)
{
  int any = 0;
  for (size_t i = 0; i < ts->nclusters; i++) {
    cluster *c = &ts->c[i];
    int stops = 1;
    if (!(c->mine = calloc(nids + 1, 1)))
      return -1;
    for (size_t k = 0; k < c->nmembers; k++) {
      const tpl_request *q = &ts->t[c->members[k].tpl].reqs[c->members[k].req];
      for (size_t j = 0; j < q->nmatchers; j++) {
        c->keep_body |= unstreamed(&q->matchers[j], streamed);
        mark_mine(&q->matchers[j], c->mine);
        stops &= q->matchers[j].type != TM_SIZE || q->matchers[j].part == TP_HEADER;
      }
      stops &= !q->nextractors;
    }
    c->can_stop = stops && !c->keep_body;
    any |= c->keep_body;
  }
  ts->window = nslots + 2;
  ts->last = calloc(ts->n * ts->window + 1, sizeof *ts->last);
  return ts->last ? any : -1;
}

void tpl_options_free(options *out)
{
  free(out->words);
  free(out->word_nocase);
  free(out->regexes);
}
