/* scan's raw requests for curl (scan(1), TEMPLATES). The request target
 * is merged with the target's URL as nuclei merges them (an absolute URL
 * gives its path alone; a path joins the target's; queries join). curl
 * gets the URL, or the target as written (CURLOPT_REQUEST_TARGET) where
 * the URL would not carry it: always under unsafe: true, and for dot
 * segments, which nuclei sends and curl's URLs remove. @Host is the URL's
 * host (nuclei connects there, the Host header staying the target's);
 * @tls-sni the name curl connects with, the URL's host, while
 * CURLOPT_CONNECT_TO takes the connection to the real one (curl has no
 * other way to set the TLS server name); @timeout the transfer's timeout.
 * Under unsafe: true nuclei sends the bytes as written, with none of its
 * own headers: the headers curl would add are taken out (a blank "Name:"
 * makes curl leave its own out), the connection is fresh and not kept
 * (nuclei's is not), and @tls-sni and @timeout do nothing, as in nuclei. */
#include "plan.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* nuclei caps @timeout at 5 minutes. */
#define TIMEOUT_MAX_MS (5L * 60 * 1000)

/* A target URL's parts as written: scheme, authority, path, query. */
typedef struct url_text {
  const char *scheme, *auth, *path, *query; /* query NULL: no '?' */
  size_t scheme_len, auth_len, path_len, query_len;
} url_text;

static void split(const char *u, url_text *t)
{
  const char *sep = strstr(u, "://");
  t->scheme = sep ? u : "http";
  t->scheme_len = sep ? (size_t)(sep - u) : 4;
  t->auth = sep ? sep + 3 : u;
  t->auth_len = strcspn(t->auth, "/?#");
  t->path = t->auth + t->auth_len;
  t->path_len = strcspn(t->path, "?#");
  t->query = t->path[t->path_len] == '?' ? t->path + t->path_len + 1 : NULL;
  t->query_len = t->query ? strcspn(t->query, "#") : 0;
}

/* The length of an absolute http(s) URL's scheme and authority at the
 * start of p (nuclei keeps its path alone), or 0. */
static size_t absolute(const char *p)
{
  size_t n = !strncmp(p, "http://", 7) ? 7 : !strncmp(p, "https://", 8) ? 8 : 0;
  return n ? n + strcspn(p + n, "/?#") : 0;
}

/* The port of authority a[0..n), as written ("" when none), into port. */
static void port_of(const char *a, size_t n, char *port, size_t cap)
{
  const char *end = a + n, *c = end;
  while (c > a && isdigit((unsigned char)c[-1]))
    c--;
  int has = c > a && c < end && c[-1] == ':' && (a[0] != '[' || c[-2] == ']');
  size_t len = has ? (size_t)(end - c) : 0;
  len = len < cap ? len : cap - 1;
  memcpy(port, c, len);
  port[len] = '\0';
}

/* ---- Merging paths (nuclei's) ------------------------------------------- */

/* Whether x[0..n) is the first n bytes of "/" (slash 1) then b. */
static int same(const char *x, size_t n, int slash, const char *b)
{
  if (slash && n)
    return x[0] == '/' && !memcmp(x + 1, b, n - 1);
  return !memcmp(x, b, n);
}

/* Path b joined to path a: one slash between them; b alone when it starts
 * with a, a alone when it ends with b. */
static void merge_paths(line *out, const char *a, size_t an, const char *b, size_t bn)
{
  if (an && a[an - 1] == '/')
    while (bn && *b == '/')
      b++, bn--;
  if (!an || !bn) {
    put(out, an ? a : b, an ? an : bn);
    return;
  }
  int slash = a[an - 1] != '/' && b[0] != '/'; /* b as joined: "/" then b */
  size_t en = bn + (size_t)slash;
  if ((en == an && same(a, an, slash, b)) || (an > en && same(a + an - en, en, slash, b))) {
    put(out, a, an);
    return;
  }
  if (!(an < en && same(a, an, slash, b)))
    put(out, a, an);
  put(out, "/", (size_t)slash);
  put(out, b, bn);
}

/* The target's query, then q[0..qn): joined by '&'. */
static void join_queries(line *out, const url_text *u, const char *q, size_t qn)
{
  if (!u->query_len && !qn)
    return;
  put(out, "?", 1);
  put(out, u->query ? u->query : "", u->query_len);
  put(out, "&", u->query_len && qn ? 1 : 0);
  put(out, qn ? q : "", qn);
}

/* Path p[0..n) (a request target that is no absolute URL) merged with the
 * target's, as a relative URL: a path from '/', then a query. */
static void merged(line *out, const url_text *u, const char *p, size_t n)
{
  size_t pn = strcspn(p, "?#"), qn = 0;
  pn = pn < n ? pn : n;
  const char *q = pn < n && p[pn] == '?' ? p + pn + 1 : NULL;
  if (q)
    qn = strcspn(q, "#") < (size_t)(p + n - q) ? strcspn(q, "#") : (size_t)(p + n - q);
  size_t at = out->len;
  merge_paths(out, u->path, u->path_len, p, pn);
  if (out->len > at && out->p[at] != '/' && (put(out, "/", 1), !out->nomem)) {
    /* a path starts with '/' */
    memmove(out->p + at + 1, out->p + at, out->len - at - 1);
    out->p[at] = '/';
  }
  join_queries(out, u, q, qn);
}

/* The target's own path and query, as a relative URL. */
static void own_path(line *out, const url_text *u)
{
  put(out, u->path, u->path_len);
  join_queries(out, u, "", 0);
}

/* The bytes of out from at on that a URL cannot hold, percent-encoded
 * (as Go's URLs do). */
static void encode(line *out, size_t at)
{
  static const char hex[] = "0123456789ABCDEF";
  size_t i = at;
  while (i < out->len && (unsigned char)out->p[i] > ' ' && (unsigned char)out->p[i] < 0x7f)
    i++;
  if (out->nomem || i == out->len)
    return; /* nothing to encode: the usual case */
  line m = {0}; /* the rest, from the first byte to encode */
  put(&m, out->p + i, out->len - i);
  out->len = i;
  for (size_t k = 0; k < m.len; k++) {
    unsigned char b = (unsigned char)m.p[k];
    char pct[3] = {'%', hex[b >> 4], hex[b & 15]};
    if (b > ' ' && b < 0x7f)
      put(out, m.p + k, 1);
    else
      put(out, pct, 3);
  }
  out->nomem |= m.nomem;
  free(m.p);
}

/* The target of a request that is not unsafe: nuclei's merge, with bytes
 * that a URL cannot hold percent-encoded. */
static void safe_target(line *out, const url_text *u, const char *t)
{
  size_t at = out->len;
  t += absolute(t);
  if (!strcmp(t, "/"))
    t = "";
  if (!*t)
    own_path(out, u);
  else
    merged(out, u, t, strlen(t));
  encode(out, at);
}

/* The target of an unsafe request, as nuclei writes it over the first
 * field of the request target as written: an absolute URL's path; a path
 * merged with the target's (one without '/', on a target without a path,
 * keeps its own with the target's query). The rest stays as written.
 * shown: the path nuclei reports (the target's own, but for a merge). */
static void unsafe_target(line *out, const url_text *u, const char *t, line *shown)
{
  size_t lead = strspn(t, " \t"), f = strcspn(t + lead, " \t"), abs = absolute(t + lead);
  abs = abs < f ? abs : f;
  const char *first = t + lead + abs, *rest = t + lead + f;
  size_t fn = f - abs;
  put(out, t, lead);
  if (!fn) { /* no path: the request target stays as written */
    own_path(shown, u);
  } else if ((u->path_len == 0 || (u->path_len == 1 && u->path[0] == '/')) && first[0] != '/') {
    size_t pn = strcspn(first, "?");
    put(out, first, pn < fn ? pn : fn);
    join_queries(out, u, first + pn + 1, pn + 1 < fn ? fn - pn - 1 : 0);
    own_path(shown, u);
  } else if (fn == 1 && first[0] == '/' && u->path_len) {
    own_path(out, u);
    own_path(shown, u);
  } else {
    merged(out, u, first, fn);
    merged(shown, u, first, fn);
  }
  put(out, rest, strlen(rest));
}

/* Whether a path holds a dot segment, which curl's URLs remove. */
static int dot_segments(const char *p)
{
  size_t n = strcspn(p, "?#");
  for (size_t i = 0; i < n; i++)
    if ((i == 0 || p[i - 1] == '/') && p[i] == '.' &&
        (i + 1 == n || p[i + 1] == '/' || (p[i + 1] == '.' && (i + 2 == n || p[i + 2] == '/'))))
      return 1;
  return 0;
}

/* ---- Annotations -------------------------------------------------------- */


/* A Go duration ("10s", "1m30s", "500ms") in milliseconds (0 when not
 * above 0), or -1. */
static long duration_ms(const char *v, size_t n)
{
  static const struct {
    const char *unit;
    double ms;
  } units[] = {{"ns", 1e-6}, {"us", 1e-3}, {"\xc2\xb5s", 1e-3}, {"\xce\xbcs", 1e-3},
               {"ms", 1},    {"s", 1e3},   {"m", 6e4},          {"h", 3.6e6}};
  double total = 0;
  size_t i = n && (v[0] == '-' || v[0] == '+');
  int neg = n && v[0] == '-';
  if (n - i == 1 && v[i] == '0')
    return 0;
  if (i == n)
    return -1;
  while (i < n) {
    size_t d = i, k = 0;
    double x = 0, scale = 1;
    while (i < n && isdigit((unsigned char)v[i]))
      x = x * 10 + (v[i++] - '0');
    if (i < n && v[i] == '.')
      for (i++; i < n && isdigit((unsigned char)v[i]); i++)
        x += (v[i] - '0') * (scale /= 10);
    size_t u = i;
    while (u < n && v[u] != '.' && !isdigit((unsigned char)v[u]))
      u++;
    while (k < sizeof units / sizeof *units &&
           (strlen(units[k].unit) != u - i || strncmp(v + i, units[k].unit, u - i)))
      k++;
    if (i == d || (i == d + 1 && v[d] == '.') || k == sizeof units / sizeof *units)
      return -1;
    total += x * units[k].ms;
    i = u;
  }
  return neg ? 0 : total > TIMEOUT_MAX_MS ? TIMEOUT_MAX_MS : (long)total;
}

/* The value of annotation name, trimmed, new (NULL: none, or no memory:
 * *nomem). */
static char *note(const char *notes, const char *name, int *nomem)
{
  const char *v;
  size_t n;
  if (!notes || !tpl_annotation(notes, name, &v, &n))
    return NULL;
  char *s = strndup(v, n);
  *nomem |= !s;
  return s;
}

/* Whether name is a host name curl can send as the TLS server name. */
static int host_name(const char *name)
{
  return *name && strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") ==
                      strlen(name);
}

/* The value of the template's Host header, or NULL. */
static const char *host_header(const plan_job *job)
{
  for (const struct curl_slist *h = job->own; h; h = h->next)
    if (plan_header_is(h->data, "Host"))
      return h->data + 5 + strspn(h->data + 5, " \t");
  return NULL;
}

/* The Host header nuclei sends where none is written: the target's
 * authority, without the port its scheme implies. */
static void target_host(const url_text *u, line *host)
{
  char port[16];
  port_of(u->auth, u->auth_len, port, sizeof port);
  int implied = (u->scheme_len == 4 && !strncasecmp(u->scheme, "http", 4) && !strcmp(port, "80")) ||
                (u->scheme_len == 5 && !strncasecmp(u->scheme, "https", 5) && !strcmp(port, "443"));
  puts_line(host, "Host: ");
  put(host, u->auth, u->auth_len - (implied ? strlen(port) + 1 : 0));
}

/* @tls-sni's name (over https): the host of the URL curl is given, which
 * CONNECT_TO takes to the authority's (to's) host and port. */
static expr_code tls_sni(const char *name, const url_text *to, const char *rel, plan_job *job,
                         expr_error *err)
{
  if (!host_name(name)) {
    err->code = EXPR_E_VALUE;
    snprintf(err->msg, sizeof err->msg, "@tls-sni: not a host name");
    return EXPR_E_VALUE;
  }
  char port[16];
  port_of(to->auth, to->auth_len, port, sizeof port);
  const char *pt = port[0] ? port : "443";
  line cu = {0}, l = {0};
  printf_line(&cu, "https://%s:%s%s", name, pt, rel);
  printf_line(&l, "%s:%s:%.*s:%s", name, pt,
              (int)(to->auth_len - (port[0] ? strlen(port) + 1 : 0)), to->auth, pt);
  put(&cu, "", 1);
  put(&l, "", 1);
  expr_code rc = cu.nomem || l.nomem || !(job->connect_to = curl_slist_append(NULL, l.p))
                     ? EXPR_E_NOMEM
                     : EXPR_OK;
  if (rc == EXPR_OK)
    job->curl_url = cu.p, cu.p = NULL;
  free(cu.p);
  free(l.p);
  return rc;
}

/* What a request that is not unsafe sends: @timeout's; the target's Host
 * header where the host curl connects to (to's) is another (@Host,
 * @tls-sni: nuclei's Host stays the target's); @tls-sni's name
 * (request.host: the Host header's) through the URL. */
static expr_code annotate(const char *notes, const url_text *u, const url_text *to,
                          const char *rel, plan_job *job, expr_error *err)
{
  int nomem = 0;
  char *timeout = note(notes, "timeout", &nomem), *sni = note(notes, "tls-sni", &nomem);
  long ms = timeout ? duration_ms(timeout, strlen(timeout)) : -1;
  job->timeout_ms = ms < 0 ? 0 : ms ? ms : 1; /* 0s: at once, as a deadline passed */
  free(timeout);
  expr_code rc = nomem ? EXPR_E_NOMEM : EXPR_OK;
  int moved = to->auth_len != u->auth_len || memcmp(to->auth, u->auth, u->auth_len);
  const char *written = host_header(job), *name = sni;
  if (name)
    name += !strncmp(name, "https://", 8) ? 8 : !strncmp(name, "http://", 7) ? 7 : 0;
  line host = {0}; /* the target's Host header, made when it is needed */
  if (!written && (moved || (name && !strcmp(name, "request.host")))) {
    target_host(u, &host);
    put(&host, "", 1);
    rc = host.nomem ? EXPR_E_NOMEM : rc;
  }
  char *own = NULL;
  if (rc == EXPR_OK && name && !strcmp(name, "request.host")) { /* the Host header's name */
    const char *h = written ? written : host.p + 6;
    name = own = strndup(h, h[0] == '[' ? strcspn(h, "]") + 1 : strcspn(h, ":"));
    rc = own ? rc : EXPR_E_NOMEM;
  }
  if (rc == EXPR_OK && name && to->scheme_len == 5 && !strncasecmp(to->scheme, "https", 5)) {
    rc = tls_sni(name, to, rel, job, err);
    moved = 1;
  }
  if (rc == EXPR_OK && moved && !written) {
    if (!host.p) { /* moved by @tls-sni alone */
      target_host(u, &host);
      put(&host, "", 1);
    }
    rc = host.nomem ? EXPR_E_NOMEM : plan_job_header(job, host.p);
  }
  free(own);
  free(sni);
  free(host.p);
  return rc;
}

/* @Host: the scheme and authority the request goes to, into to (the
 * target's when none; else @Host's, held in own). 0, or -1 when out of
 * memory. */
static int at_host(const char *notes, const url_text *u, url_text *to, line *own)
{
  int nomem = 0;
  char *v = note(notes, "Host", &nomem), *h = v;
  *to = *u;
  if (!v)
    return nomem ? -1 : 0;
  line scheme = {0};
  if (!strncasecmp(h, "http://", 7) || !strncasecmp(h, "https://", 8)) {
    put(&scheme, h, strcspn(h, ":"));
    h += strcspn(h, ":") + 3;
  } else {
    put(&scheme, u->scheme, u->scheme_len);
  }
  char port[16], mine[16];
  port_of(h, strlen(h), port, sizeof port);
  port_of(u->auth, u->auth_len, mine, sizeof mine);
  size_t at = scheme.len;
  put(&scheme, h, strlen(h)); /* one line: the scheme, then the authority */
  if (!port[0] && mine[0])
    printf_line(&scheme, ":%s", mine);
  free(v);
  *own = scheme;
  if (own->nomem)
    return -1;
  to->scheme = own->p;
  to->scheme_len = at;
  to->auth = own->p + at;
  to->auth_len = own->len - at;
  return 0;
}

/* unsafe: true: curl's own headers taken out, but for those the template
 * writes (they come first in job->own, where curl looks for them first). */
static expr_code unsafe_headers(plan_job *job)
{
  static const char *const curls[] = {"Host:", "Accept:", "User-Agent:", "Accept-Encoding:",
                                      "Content-Length:"};
  expr_code rc = EXPR_OK;
  for (size_t i = 0; rc == EXPR_OK && i < sizeof curls / sizeof *curls; i++)
    rc = plan_job_header(job, curls[i]);
  return rc;
}

/* to's scheme and authority, then path, onto l. */
static void url_of(line *l, const url_text *to, const char *path)
{
  put(l, to->scheme, to->scheme_len);
  put(l, "://", 3);
  put(l, to->auth, to->auth_len);
  puts_line(l, path);
}

expr_code plan_raw_request(const cluster *c, const char *target, const char *path,
                           const char *notes, plan_job *job, char **url, expr_error *err)
{
  url_text u, to;
  split(target, &u);
  if (c->raw->no_automerge) /* the target's path is left out, its query kept */
    u.path_len = 0;
  line host = {0}, rel = {0}, shown = {0}, l = {0};
  int unsafe = c->raw->unsafe;
  expr_code rc = at_host(notes, &u, &to, &host) == 0 ? EXPR_OK : EXPR_E_NOMEM;
  if (unsafe)
    unsafe_target(&rel, &u, path, &shown);
  else
    safe_target(&rel, &u, path);
  put(&rel, "", 1);
  if (unsafe)
    put(&shown, "", 1);
  if (rel.nomem || shown.nomem)
    rc = EXPR_E_NOMEM;
  if (rc == EXPR_OK && !unsafe)
    rc = annotate(notes, &u, &to, rel.p, job, err);
  else if (rc == EXPR_OK)
    rc = unsafe_headers(job);
  if (rc == EXPR_OK) {
    url_of(&l, &to, unsafe ? shown.p : rel.p);
    rc = l.nomem ? EXPR_E_NOMEM : rc;
  }
  if (rc == EXPR_OK && (unsafe || (!c->redirects && dot_segments(rel.p)))) {
    /* curl's URL: the root; what it sends: the request target as written */
    job->request_target = rel.p;
    rel.p = NULL;
    if (!job->curl_url) {
      line r = {0};
      url_of(&r, &to, "/");
      job->curl_url = r.p;
      rc = r.nomem ? EXPR_E_NOMEM : rc;
    }
  }
  *url = rc == EXPR_OK ? l.p : NULL;
  if (rc != EXPR_OK)
    free(l.p);
  free(host.p);
  free(rel.p);
  free(shown.p);
  return rc;
}

int plan_raw_set(CURL *e, const plan *p, const cluster *c, const plan_job *job)
{
  int unsafe = c->raw && c->raw->unsafe;
  int ok = curl_easy_setopt(e, CURLOPT_REQUEST_TARGET, job->request_target) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_CONNECT_TO, job->connect_to) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_TIMEOUT_MS,
                            job->timeout_ms ? job->timeout_ms : p->timeout_ms) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, unsafe ? 1L : 0L) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_FORBID_REUSE, unsafe || p->forbid_reuse ? 1L : 0L) ==
               CURLE_OK;
  if (ok && job->curl_url)
    ok = curl_easy_setopt(e, CURLOPT_URL, job->curl_url) == CURLE_OK;
  return ok ? 0 : -1;
}
