/* scan's requests for a target: the {{...}} of a cluster's request
 * replaced by the values of its template for the target (plan-vars.c),
 * the URL and the easy handle's request made of it, and the jobs the loop
 * runs: each target, each cluster. */
#include "plan.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* text with job's values, new, into *out: EXPR_OK, or why not (an
 * expression failed, err says how; or out of memory). */
static expr_code rendered(const plan_job *job, const char *text, char **out, expr_error *err)
{
  line l = {0};
  expr_code rc = plan_render(&job->vals, text, &l, err);
  put(&l, "", 1);
  if (rc == EXPR_OK && l.nomem)
    rc = EXPR_E_NOMEM;
  *out = rc == EXPR_OK ? l.p : NULL;
  if (rc != EXPR_OK)
    free(l.p);
  return rc;
}

/* text, of cluster c's texts kept (bit of c->kept), with job's values:
 * *out, valid while job's values are, and in *own what the caller frees
 * (NULL: nothing). A text without "{{" is itself; a kept one is rendered
 * once per job (while it has room). EXPR_OK, or as rendered. */
static expr_code text_of(plan_job *job, const cluster *c, unsigned bit, const char *text,
                         const char **out, char **own, expr_error *err)
{
  *out = text;
  *own = NULL;
  if (!strstr(text, "{{"))
    return EXPR_OK;
  int keep = (c->kept & bit) != 0;
  for (size_t i = 0; keep && i < job->nkept; i++)
    if (job->kept_text[i] == text)
      return *out = job->kept_value[i], EXPR_OK;
  expr_code rc = rendered(job, text, own, err);
  *out = *own;
  if (rc == EXPR_OK && keep && job->nkept < PLAN_JOB_KEPT) {
    job->kept_text[job->nkept] = text;
    job->kept_value[job->nkept++] = *own;
    *own = NULL; /* the job's now */
  }
  return rc;
}

unsigned plan_kept_texts(const templates *ts, size_t t, const cluster *c)
{
  const tpl *tp = &ts->t[t];
  const unsigned other =
      TPL_USES_TEMPLATE | TPL_USES_VOLATILE | TPL_USES_DYNAMIC | TPL_USES_UNRESOLVED;
  const char *texts[3] = {c->path, c->body, c->raw ? c->raw->annotations : NULL};
  unsigned kept = 0;
  for (size_t i = 0; i < 3 + c->nheaders && i < 32; i++) {
    const char *text = i < 3 ? texts[i] : c->headers[i - 3];
    if (text && !(tpl_text_uses(tp, ts->given, ts->ngiven, text) & other))
      kept |= 1u << i;
  }
  return kept;
}

/* What job kept (text_of), dropped. */
static void kept_free(plan_job *job)
{
  for (size_t i = 0; i < job->nkept; i++)
    free(job->kept_value[i]);
  job->nkept = 0;
}

const plan_vals *plan_job_vals(const plan_job *job, size_t t)
{
  return job->vals.p && job->vals_all && job->vals.tpl == t ? &job->vals : NULL;
}

int plan_header_is(const char *h, const char *name)
{
  size_t n = strlen(name);
  return !strncasecmp(h, name, n) && (h[n] == ':' || h[n] == ';');
}

expr_code plan_job_header(plan_job *job, const char *h)
{
  struct curl_slist *more = curl_slist_append(job->own, h);
  if (more)
    job->own = more;
  return more ? EXPR_OK : EXPR_E_NOMEM;
}

/* Whether a template's header is one nuclei leaves out: the framing of
 * the body, which it computes for the body it sends (as curl does),
 * unless unsafe: true sends the request as written. */
static int framing(const cluster *c, const char *h)
{
  return !(c->raw && c->raw->unsafe) &&
         (plan_header_is(h, "Content-Length") || plan_header_is(h, "Transfer-Encoding"));
}

/* Cluster c's body with job's values. Go, nuclei's client, sends
 * Content-Length: 0 for a request without a body (but GET and HEAD): curl
 * does, given an empty one. nuclei adds no Content-Type to a body (curl
 * would, a form's) and never sends Expect: 100-continue (curl would, for a
 * large body, and wait): blank, they make curl leave its own out, the
 * template's coming first. */
static expr_code job_body(const cluster *c, plan_job *job, expr_error *err)
{
  expr_code rc = EXPR_OK;
  const char *body;
  if (c->body) {
    rc = text_of(job, c, 2, c->body, &body, &job->body, err);
    if (rc == EXPR_OK && !job->body) /* as written, or kept: a copy of its own */
      rc = (job->body = strdup(body)) != NULL ? EXPR_OK : EXPR_E_NOMEM;
  } else if (!(c->raw && c->raw->unsafe) && !c->nobody && strcmp(c->method, "GET")) {
    rc = (job->body = strdup("")) != NULL ? EXPR_OK : EXPR_E_NOMEM;
  }
  if (rc == EXPR_OK && job->body)
    rc = plan_job_header(job, "Content-Type:");
  if (rc == EXPR_OK && job->body)
    rc = plan_job_header(job, "Expect:");
  return rc;
}

/* The scheme and authority of url (a new string), or NULL when out of
 * memory. */
static char *origin_of(const char *url)
{
  const char *sep = strstr(url, "://");
  size_t n = sep ? (size_t)(sep + 3 - url) : 0;
  return strndup(url, n + strcspn(url + n, "/?#"));
}

/* Cluster c's URL for job's target (into *url), headers and body with
 * job's values. A raw request of a sequence run once has no target: the
 * scheme and authority of its URL, its own, are the target it merges
 * with. */
static expr_code job_request(const cluster *c, plan_job *job, char **url, expr_error *err)
{
  const char *path, *notes = NULL, *h;
  char *path_own, *notes_own = NULL, *h_own, *origin = NULL;
  expr_code rc = text_of(job, c, 1, c->path, &path, &path_own, err);
  if (rc == EXPR_OK && !c->raw && !(*url = path_own ? path_own : strdup(path)))
    rc = EXPR_E_NOMEM;
  if (!c->raw)
    path_own = NULL; /* *url's */
  if (rc == EXPR_OK && c->raw && !job->target && !(origin = origin_of(path)))
    rc = EXPR_E_NOMEM;
  const char *target = job->target ? job->target : origin;
  for (size_t k = 0; rc == EXPR_OK && k < c->nheaders; k++) {
    unsigned bit = k + 3 < 32 ? 8u << k : 0;
    if ((rc = text_of(job, c, bit, c->headers[k], &h, &h_own, err)) == EXPR_OK && !framing(c, h))
      rc = plan_job_header(job, h);
    free(h_own);
  }
  if (rc == EXPR_OK)
    rc = job_body(c, job, err);
  if (rc == EXPR_OK && c->raw && c->raw->annotations)
    rc = text_of(job, c, 4, c->raw->annotations, &notes, &notes_own, err);
  if (rc == EXPR_OK && c->raw)
    rc = plan_raw_request(c, target, path, notes, job, url, err);
  free(path_own);
  free(notes_own);
  free(origin);
  if (rc != EXPR_OK) {
    free(*url);
    *url = NULL;
  }
  return rc;
}

/* job->headers: copies of the -H headers, the last linked to job->own,
 * which is not copied (job->own itself when there is no -H). Its copies
 * alone freed. */
static void headers_free(plan_job *job)
{
  struct curl_slist *h = job->headers;
  while (h && h != job->own && h->next != job->own)
    h = h->next;
  if (h && h != job->own)
    h->next = NULL; /* the copies' end */
  if (job->headers != job->own)
    curl_slist_free_all(job->headers);
  job->headers = NULL;
}

void plan_job_step_free(plan_job *job)
{
  headers_free(job);
  curl_slist_free_all(job->own);
  free(job->body);
  free(job->request_target);
  free(job->curl_url);
  curl_slist_free_all(job->connect_to);
  job->headers = job->own = job->connect_to = NULL;
  job->body = job->request_target = job->curl_url = NULL;
  job->timeout_ms = 0;
}

void plan_job_free(plan_job *job)
{
  plan_job_step_free(job);
  free(job->target);
  job->target = NULL;
  plan_vals_free(&job->vals);
  kept_free(job);
  job->vals_all = 0;
  plan_seq_free(&job->seq);
  job->in_seq = 0;
}

/* A copy of header h after *last, the last of job->headers' copies (NULL:
 * none yet), which it becomes. 0 when out of memory. */
static int copy_to(plan_job *job, struct curl_slist **last, const char *h)
{
  struct curl_slist *more = curl_slist_append(*last, h);
  if (!more)
    return 0;
  if (!job->headers)
    job->headers = more;
  *last = *last ? (*last)->next : more;
  return 1;
}

int plan_headers_name(const struct curl_slist *list, const char *h)
{
  size_t n = strcspn(h, ":;");
  for (; list; list = list->next)
    if (!strncasecmp(list->data, h, n) && (list->data[n] == ':' || list->data[n] == ';'))
      return 1;
  return 0;
}

int plan_set_request(CURL *e, const plan *p, const cluster *c, const struct curl_slist *defaults,
                     const struct curl_slist *extra, plan_job *job)
{
  long redirs = c->redirects ? c->max_redirs : 0;
  headers_free(job);
  struct curl_slist *last = NULL;
  int ok = 1;
  for (const struct curl_slist *h = defaults; ok && h; h = h->next)
    if (!plan_headers_name(job->own, h->data))
      ok = copy_to(job, &last, h->data);
  for (const struct curl_slist *h = extra; ok && h; h = h->next)
    ok = copy_to(job, &last, h->data);
  if (!ok)
    return -1;
  if (last)
    last->next = job->own; /* the template's, not copied */
  else
    job->headers = job->own;
  ok = curl_easy_setopt(e, CURLOPT_HTTPGET, 1L) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_NOBODY, 0L) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, (char *)NULL) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_HTTPHEADER, job->headers) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, redirs > 0 ? 1L : 0L) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_MAXREDIRS, redirs) == CURLE_OK;
  if (ok && job->body)
    ok = curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(job->body)) ==
             CURLE_OK &&
         curl_easy_setopt(e, CURLOPT_POSTFIELDS, job->body) == CURLE_OK;
  if (ok && c->nobody)
    ok = curl_easy_setopt(e, CURLOPT_NOBODY, 1L) == CURLE_OK;
  else if (ok && c->custom)
    ok = curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, c->method) == CURLE_OK;
  return ok && plan_raw_set(e, p, c, job) == 0 ? 0 : -1;
}

/* Job's values for cluster c and target: 0, -1 when out of memory, -2
 * when target is not a URL. */
static int job_values(plan *p, const cluster *c, const char *target, plan_job *job)
{
  plan_job_free(job);
  job->vals_all = c->owner != NO_OWNER;
  if (target && !(job->target = strdup(target)))
    return -1;
  int rc = target ? plan_here_take(p, target) : 0; /* made once per target */
  if (rc != 0)
    return rc;
  return plan_vals_eval(&job->vals, p, job->vals_all ? c->owner : c->members[0].tpl, target,
                        job->vals_all);
}

char *plan_job_request(plan *p, size_t c, plan_job *job)
{
  char *url = NULL;
  expr_error err;
  if (p->c[c].unresolved)
    return NULL; /* never sent: it ends its block */
  expr_code made = job_request(&p->c[c], job, &url, &err);
  if (made != EXPR_OK && made != EXPR_E_NOMEM && !(job->in_seq && job->seq.missing) &&
      !p->unsent++) /* not sent: counted */
    snprintf(p->unsent_why, sizeof p->unsent_why, "%s: %s", p->ts->t[job->vals.tpl].id, err.msg);
  if (url && job->in_seq && job->seq.missing) { /* a value named was not extracted */
    free(url);
    url = NULL;
  }
  return url;
}

/* The next target, if the current one has no more jobs: 0, or -1 at the
 * end. */
static int next_target_of(plan *p, targets *src)
{
  if (p->target && (p->next_cluster < p->nindependent || p->next_seq < p->nseqs))
    return 0;
  free(p->target);
  p->next_cluster = p->next_seq = p->next_lane = 0;
  if (!p->nclusters || !(p->target = next_target(src)))
    return -1;
  p->seq++;
  return 0;
}

/* The next sequence that runs once in the scan, started: its first URL,
 * or NULL when there is none left (or out of memory). */
static char *next_once(plan *p, size_t *cl, plan_job *job)
{
  while (p->next_once < p->nseqs) {
    size_t i = p->next_once++;
    if (!p->seqs[i].once)
      continue;
    if (job_values(p, &p->c[p->seqs[i].first], NULL, job) != 0)
      return NULL;
    char *url = plan_seq_start(p, i, 0, job, cl);
    if (url)
      return url;
  }
  return NULL;
}

char *plan_next_job(plan *p, targets *src, size_t *cl, unsigned long *seq, char **target,
                    plan_job *job)
{
  char *url = next_once(p, cl, job);
  if (url && !(*target = strdup(url))) {
    free(url);
    return NULL;
  }
  if (url)
    return *seq = 0, url;
  for (;;) {
    if (next_target_of(p, src) != 0)
      return NULL;
    int independent = p->next_cluster < p->nindependent;
    size_t i = independent ? p->next_cluster++ : p->next_seq, lane = 0;
    if (!independent && (lane = p->next_lane++) + 1 >= p->seqs[i].lanes) {
      p->next_lane = 0; /* its last lane: the next sequence's turn */
      p->next_seq++;
    }
    if (!independent && p->seqs[i].once)
      continue; /* run once, before */
    const cluster *c = &p->c[independent ? i : p->seqs[i].first];
    int rc = job_values(p, c, p->target, job);
    if (rc == -2) { /* not a URL: no job of this target can run */
      p->next_cluster = p->nindependent;
      p->next_seq = p->nseqs;
    }
    if (rc == -2)
      continue;
    if (rc != 0)
      return NULL;
    url = independent ? plan_job_request(p, i, job) : plan_seq_start(p, i, lane, job, cl);
    if (!url)
      continue;
    char *t = strdup(p->target);
    if (!t) {
      free(url);
      return NULL;
    }
    if (independent)
      *cl = i;
    *seq = p->seq;
    *target = t;
    return url;
  }
}
