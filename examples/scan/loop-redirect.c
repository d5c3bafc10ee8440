/* scan's redirects of template requests, as nuclei follows them: curl
 * follows them within the transfer (respchain keeps every hop), and
 *  - host-redirects: true follows only those that stay on the host of the
 *    request: same host name, and the same port where either names one
 *    other than its scheme's default (nuclei compares host[:port] with
 *    :80 for http and :443 for https left out, the request's Host header
 *    standing for its URL's host where it names one). curl cannot be
 *    told so: the slot's header callback, which hands each line to the
 *    response first, reads the end of each redirect's header block, and
 *    where its Location (resolved against the hop's URL) leaves the host
 *    it stops the transfer there, before curl follows it over whatever
 *    connection it has or opens, so that no request goes there; the chain
 *    ends at the redirect that pointed away, as nuclei's does;
 *  - a chain that reaches max-redirects ends at the redirect past it,
 *    nuclei's last response, not as a failed transfer
 *    (CURLE_TOO_MANY_REDIRECTS).
 * curl reads no body of a redirect it follows, and a stopped one's is not
 * read: the body of the redirect a chain ends at so is empty. */
#include "loop.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The host of url as nuclei compares hosts: its name, and ":port" unless
 * it is its scheme's default or not given. NULL when out of memory or not
 * a URL. */
static char *host_key(const char *url)
{
  CURLU *u = curl_url();
  char *scheme = NULL, *host = NULL, *port = NULL, *key = NULL;
  if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK) {
    if (curl_url_get(u, CURLUPART_PORT, &port, 0) == CURLUE_OK &&
        ((!strcasecmp(scheme, "http") && !strcmp(port, "80")) ||
         (!strcasecmp(scheme, "https") && !strcmp(port, "443")))) {
      curl_free(port);
      port = NULL;
    }
    line l = {0};
    printf_line(&l, "%s%s%s", host, port ? ":" : "", port ? port : "");
    key = l.nomem ? NULL : l.p;
    if (!key)
      free(l.p);
  }
  curl_free(scheme);
  curl_free(host);
  curl_free(port);
  curl_url_cleanup(u);
  return key;
}

/* The host a request of the slot stays on: its Host header's, else its
 * URL's. NULL when out of memory or not a URL. */
static char *origin_of(const slot *sl)
{
  const char *host = NULL;
  for (const struct curl_slist *h = sl->job->headers; h; h = h->next)
    if (!strncasecmp(h->data, "Host:", 5))
      host = h->data + 5 + strspn(h->data + 5, " \t");
  line l = {0};
  if (host && *host)
    printf_line(&l, "%.*s//%s/", (int)strcspn(sl->url, "/"), sl->url, host);
  char *key = host && *host ? (l.nomem ? NULL : host_key(l.p)) : host_key(sl->url);
  free(l.p);
  return key ? key : strdup(""); /* not a URL: no redirect stays on it */
}

/* Whether the last hop of the slot's response is a redirect whose
 * Location leaves the slot's host (origin). One curl cannot resolve
 * against the hop's URL leaves it too: no request goes anywhere for it. */
static int leaves_host(const slot *sl)
{
  rc_view loc;
  char *url = NULL;
  int status = rc_status(sl->resp);
  if (status < 300 || status > 399 || rc_header(sl->resp, -1, "Location", 0, &loc) != RC_OK ||
      curl_easy_getinfo(sl->easy, CURLINFO_EFFECTIVE_URL, &url) != CURLE_OK || !url)
    return 0;
  char *to = strndup(loc.ptr, loc.len), *at = NULL, *key = NULL;
  CURLU *u = curl_url();
  unsigned flags = 0;
#ifdef CURLU_ALLOW_SPACE
  flags |= CURLU_ALLOW_SPACE; /* as curl reads a Location since 7.78 */
#endif
  if (to && u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
      curl_url_set(u, CURLUPART_URL, to, flags) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_URL, &at, 0) == CURLUE_OK)
    key = host_key(at);
  int away = !key || strcmp(key, sl->origin) != 0;
  free(key);
  curl_free(at);
  curl_url_cleanup(u);
  free(to);
  return away;
}

/* curl's header lines: to the response, and at the end of a header block
 * (its blank line) of a request that stays on its host, a redirect that
 * leaves it stops the transfer (CURLE_WRITE_ERROR, which redirect_end
 * makes the chain's end). */
static size_t header_line(char *ptr, size_t size, size_t nitems, void *ud)
{
  slot *sl = ud;
  size_t n = size * nitems;
  size_t taken = rc_header_cb(ptr, size, nitems, sl->resp);
  int blank = (n == 2 && ptr[0] == '\r') || (n == 1 && ptr[0] == '\n');
  if (taken != n || !sl->origin || !blank)
    return taken;
  if (leaves_host(sl)) {
    sl->left_host = 1;
    return 0; /* not n: curl fails the transfer */
  }
  return n;
}

/* After rc_attach: the response's header callback is called through
 * header_line. */
int redirect_init(slot *sl)
{
  return curl_easy_setopt(sl->easy, CURLOPT_HEADERFUNCTION, header_line) == CURLE_OK &&
                 curl_easy_setopt(sl->easy, CURLOPT_HEADERDATA, (void *)sl) == CURLE_OK
             ? 0
             : -1;
}

int redirect_start(scan *s, slot *sl)
{
  free(sl->origin);
  sl->origin = NULL;
  sl->left_host = 0;
  int host = s->tpl && s->plan->c[sl->rd.cluster].redirects == TPL_REDIRECTS_HOST;
  if (host && !(sl->origin = origin_of(sl)))
    return -1;
  return 0;
}

CURLcode redirect_end(const scan *s, const slot *sl, CURLcode cc)
{
  if (s->tpl && (sl->left_host || cc == CURLE_TOO_MANY_REDIRECTS))
    return CURLE_OK;
  return cc;
}
