/* scan's redirects of template requests, as nuclei follows them: curl
 * follows them within the transfer (respchain keeps every hop), and
 *  - host-redirects: true follows only those that stay on the host of the
 *    request: same host name, and the same port where either names one
 *    other than its scheme's default (nuclei compares host[:port] with
 *    :80 for http and :443 for https left out, the request's Host header
 *    standing for its URL's host where it names one). curl cannot be
 *    told so: a connection curl opens for a hop that leaves the host is
 *    refused before it is made (CURLOPT_OPENSOCKETFUNCTION; a hop to
 *    another host never reuses a connection, except through a proxy, and
 *    there every hop gets a new one), so that no request goes there, and
 *    the chain ends at the redirect that pointed away, as nuclei's does
 *    (only its name was looked up);
 *  - a chain that reaches max-redirects ends at the redirect past it,
 *    nuclei's last response, not as a failed transfer
 *    (CURLE_TOO_MANY_REDIRECTS).
 * curl reads no body of a redirect it follows or stops at: the body of
 * the redirect a chain ends at so is empty. */
#include "loop.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

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

/* curl's connections: one for a hop after a redirect that leaves the
 * slot's host (origin) is refused. */
static curl_socket_t open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
  slot *sl = ud;
  char *url = NULL;
  long followed = 0;
  (void)purpose;
  if (sl->origin && curl_easy_getinfo(sl->easy, CURLINFO_REDIRECT_COUNT, &followed) == CURLE_OK &&
      followed > 0 && curl_easy_getinfo(sl->easy, CURLINFO_EFFECTIVE_URL, &url) == CURLE_OK &&
      url) {
    char *key = host_key(url);
    int away = !key || strcmp(key, sl->origin) != 0;
    free(key);
    if (away) {
      sl->left_host = 1;
      return CURL_SOCKET_BAD;
    }
  }
#ifdef SOCK_CLOEXEC
  return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
#else
  return socket(a->family, a->socktype, a->protocol);
#endif
}

int redirect_init(slot *sl)
{
  return curl_easy_setopt(sl->easy, CURLOPT_OPENSOCKETFUNCTION, open_socket) == CURLE_OK &&
                 curl_easy_setopt(sl->easy, CURLOPT_OPENSOCKETDATA, (void *)sl) == CURLE_OK
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
  /* Through a proxy, curl would take the proxy's connection for a hop to
   * another host without opening one. (plan_set_request, just before,
   * set it for the request: on for unsafe: true, else off.) */
  if (host && s->opt->proxy && curl_easy_setopt(sl->easy, CURLOPT_FRESH_CONNECT, 1L) != CURLE_OK)
    return -1;
  return 0;
}

CURLcode redirect_end(const scan *s, const slot *sl, CURLcode cc)
{
  if (s->tpl && (sl->left_host || cc == CURLE_TOO_MANY_REDIRECTS))
    return CURLE_OK;
  return cc;
}
