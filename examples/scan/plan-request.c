/* scan's requests for a target: the {{...}} of a cluster's request
 * replaced by the values of its template for the target (plan-vars.c),
 * the URL and the easy handle's request made of it, and the jobs the loop
 * runs: each target, each cluster. */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

/* text with job's values, new; NULL when out of memory or when an
 * expression fails (a value that cannot be made is not sent). */
static char *rendered(const plan_job *job, const char *text)
{
  line l = {0};
  expr_code rc = plan_render(&job->vals, text, &l);
  put(&l, "", 1);
  if (rc != EXPR_OK || l.nomem) {
    free(l.p);
    return NULL;
  }
  return l.p;
}

char *plan_url(const plan *p, const cluster *c, const plan_job *job)
{
  (void)p;
  return rendered(job, c->path);
}

const plan_vals *plan_job_vals(const plan_job *job, size_t t)
{
  return job->vals.p && job->vals_all && job->vals.tpl == t ? &job->vals : NULL;
}

/* Cluster c's headers (after extra, the -H ones) and body, into *job. */
static int job_request(const cluster *c, const struct curl_slist *extra, plan_job *job)
{
  int ok = 1;
  for (const struct curl_slist *h = extra; ok && h; h = h->next)
    ok = (job->headers = curl_slist_append(job->headers, h->data)) != NULL;
  for (size_t k = 0; ok && k < c->nheaders; k++) {
    char *h = rendered(job, c->headers[k]);
    ok = h && (job->headers = curl_slist_append(job->headers, h)) != NULL;
    free(h);
  }
  if (ok && c->body)
    ok = (job->body = rendered(job, c->body)) != NULL;
  return ok ? 0 : -1;
}

/* The headers and body of job (its values stay). */
static void free_request(plan_job *job)
{
  curl_slist_free_all(job->headers);
  free(job->body);
  job->headers = NULL;
  job->body = NULL;
}

void plan_job_free(plan_job *job)
{
  free_request(job);
  plan_vals_free(&job->vals);
  job->vals_all = 0;
}

int plan_set_request(CURL *e, const plan *p, const cluster *c, const struct curl_slist *extra,
                     plan_job *job)
{
  long redirs = c->redirects ? c->max_redirs : 0;
  (void)p;
  free_request(job);
  if (job_request(c, extra, job) != 0)
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

/* Job's values for cluster c and target: 0, -1 when out of memory, -2
 * when target is not a URL. */
static int job_values(const plan *p, const cluster *c, const char *target, plan_job *job)
{
  plan_job_free(job);
  job->vals_all = c->owner != NO_OWNER;
  return plan_vals_eval(&job->vals, p, job->vals_all ? c->owner : c->members[0].tpl, target,
                        job->vals_all);
}

char *plan_next_job(plan *p, targets *src, size_t *cl, unsigned long *seq, char **target,
                    plan_job *job)
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
    int rc = job_values(p, &p->c[i], p->target, job);
    if (rc == -2) /* not a URL: no job of this target can run */
      p->next_cluster = p->nclusters;
    if (rc == -2)
      continue;
    char *url = rc == 0 ? plan_url(p, &p->c[i], job) : NULL;
    if (!url && rc == 0) /* an expression failed: this request is not sent */
      continue;
    char *t = url ? strdup(p->target) : NULL;
    if (!url)
      return NULL;
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
