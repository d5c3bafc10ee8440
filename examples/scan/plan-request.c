/* scan's requests for a target: the variables of a cluster's request
 * replaced by the target's values, the URL and the easy handle's request
 * made of it, and the jobs the loop runs: each target, each cluster. */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

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
static void variable(line *l, const plan *p, const char *name, size_t n, const char *target,
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
    puts_line(l, p->randstr);
#undef IS
}

/* text with its variables replaced, into l. */
static void expand(line *l, const plan *pl, const char *text, const char *target,
                   const url_parts *u)
{
  const char *p = text, *v;
  while ((v = strstr(p, "{{")) != NULL) {
    const char *end = strstr(v + 2, "}}");
    if (!end)
      break;
    put(l, p, (size_t)(v - p));
    variable(l, pl, v + 2, (size_t)(end - v - 2), target, u);
    p = end + 2;
  }
  puts_line(l, p);
}

char *plan_url(const plan *p, const cluster *c, const char *target)
{
  url_parts u;
  line l = {0};
  if (split_url(target, &u) == 0)
    expand(&l, p, c->path, target, &u);
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
static char *expanded(const plan *p, const char *text, const char *target, const url_parts *u)
{
  line l = {0};
  expand(&l, p, text, target, u);
  put(&l, "", 1);
  if (l.nomem)
    free(l.p);
  return l.nomem ? NULL : l.p;
}

/* Cluster c's headers (after extra, the -H ones) and body for target,
 * into *job. */
static int job_request(const plan *p, const cluster *c, const struct curl_slist *extra,
                       const char *target, plan_job *job)
{
  url_parts u;
  int ok = split_url(target, &u) == 0;
  for (const struct curl_slist *h = extra; ok && h; h = h->next)
    ok = (job->headers = curl_slist_append(job->headers, h->data)) != NULL;
  for (size_t k = 0; ok && k < c->nheaders; k++) {
    char *h = expanded(p, c->headers[k], target, &u);
    ok = h && (job->headers = curl_slist_append(job->headers, h)) != NULL;
    free(h);
  }
  if (ok && c->body)
    ok = (job->body = expanded(p, c->body, target, &u)) != NULL;
  free_parts(&u);
  return ok ? 0 : -1;
}

void plan_job_free(plan_job *job)
{
  curl_slist_free_all(job->headers);
  free(job->body);
  job->headers = NULL;
  job->body = NULL;
}

int plan_set_request(CURL *e, const plan *p, const cluster *c, const struct curl_slist *extra,
                     const char *target, plan_job *job)
{
  long redirs = c->redirects ? c->max_redirs : 0;
  plan_job_free(job);
  if (job_request(p, c, extra, target, job) != 0)
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
  if (ok && c->nobody)
    ok = curl_easy_setopt(e, CURLOPT_NOBODY, 1L) == CURLE_OK;
  else if (ok && c->custom)
    ok = curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, c->method) == CURLE_OK;
  return ok ? 0 : -1;
}

char *plan_next_job(plan *p, targets *src, size_t *cl, unsigned long *seq, char **target)
{
  for (;;) {
    if (!p->target || p->next_cluster == p->nclusters) {
      free(p->target);
      p->next_cluster = 0;
      if (!p->nclusters || !(p->target = next_target(src)))
        return NULL;
      p->seq++;
    }
    size_t i = p->next_cluster++;
    char *url = plan_url(p, &p->c[i], p->target);
    if (!url) /* not a URL: no job of this target can run */
      p->next_cluster = p->nclusters;
    char *t = url ? strdup(p->target) : NULL;
    if (!url)
      continue;
    if (!t) {
      free(url);
      return NULL;
    }
    *cl = i;
    *seq = p->seq;
    *target = t;
    return url;
  }
}

/* ---- The target's variables, for the evaluation -------------------------- */

int plan_target_var(const plan *p, const char *target, const char *name, size_t n, line *out)
{
  url_parts u;
  if (!tpl_url_var(name, n) || split_url(target, &u) != 0) {
    free_parts(&u);
    return 0;
  }
  variable(out, p, name, n, target, &u);
  free_parts(&u);
  return !out->nomem;
}
