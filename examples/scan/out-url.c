/* scan's URLs in nuclei's lines: the fields nuclei writes of a target
 * (host, port, scheme, url, ip), and the URL of each response of a chain
 * of redirects (matched-at), through curl's URL parser. */
#include "out.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

/* Part of u, or NULL (curl_free). */
static char *url_part(CURLU *u, CURLUPart what, unsigned flags)
{
  char *p = NULL;
  return curl_url_get(u, what, &p, flags) == CURLUE_OK ? p : NULL;
}

void json_target_fields(line *l, const char *target)
{
  CURLU *u = curl_url();
  char *host = NULL, *port = NULL, *scheme = NULL;
  if (u && curl_url_set(u, CURLUPART_URL, target, 0) == CURLUE_OK) {
    host = url_part(u, CURLUPART_HOST, 0);
    port = url_part(u, CURLUPART_PORT, CURLU_DEFAULT_PORT);
    scheme = url_part(u, CURLUPART_SCHEME, 0);
  }
  /* nuclei's host is the name alone, an IPv6 address without brackets. */
  size_t n = host ? strlen(host) : 0;
  int v6 = n >= 2 && host[0] == '[' && host[n - 1] == ']';
  char addr[sizeof(struct in6_addr)], *name = host ? host + v6 : NULL;
  if (v6)
    host[n - 1] = '\0';
  puts_line(l, ",\"host\":");
  json_string(l, name ? name : target);
  if (port && scheme) {
    puts_line(l, ",\"port\":");
    json_string(l, port);
    puts_line(l, ",\"scheme\":");
    json_string(l, scheme);
  }
  puts_line(l, ",\"url\":");
  json_string(l, target);
  if (name && (inet_pton(AF_INET, name, addr) == 1 || inet_pton(AF_INET6, name, addr) == 1)) {
    puts_line(l, ",\"ip\":");
    json_string(l, name);
  }
  curl_free(host);
  curl_free(port);
  curl_free(scheme);
  curl_url_cleanup(u);
}

/* Whether hop i of r is a redirect with a Location, into *to. */
static int redirect_to(const rc_response *r, int i, rc_view *to)
{
  rc_hop_info h;
  return rc_hop(r, i, &h) == RC_OK && h.status >= 300 && h.status <= 399 &&
         rc_header(r, i, "location", 0, to) == RC_OK && to->len;
}

char *out_hop_url(const rc_response *r, const attempt *a, int hop)
{
  rc_view to;
  int first = 0; /* the first redirect before hop; hop when none */
  while (first < hop && !redirect_to(r, first, &to))
    first++;
  if (first == hop) /* the request's own response */
    return strdup(a->url);
  /* Each redirect before it resolved against the URL it answered, as curl
   * follows them (CURLINFO_EFFECTIVE_URL would name the URL of a hop that
   * was refused, loop-redirect.c). */
  CURLU *u = curl_url();
  int ok = u && curl_url_set(u, CURLUPART_URL, a->url, 0) == CURLUE_OK;
  for (int i = first; ok && i < hop; i++) {
    if (!redirect_to(r, i, &to))
      continue;
    char *next = strndup(to.ptr, to.len);
    ok = next && curl_url_set(u, CURLUPART_URL, next, CURLU_URLENCODE) == CURLUE_OK;
    free(next);
  }
  char *got = ok ? url_part(u, CURLUPART_URL, 0) : NULL;
  curl_url_cleanup(u);
  char *url = got ? strdup(got) : NULL;
  curl_free(got);
  return url;
}
