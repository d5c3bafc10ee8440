/* scan's output: one JSON line per target, built whole in memory and
 * written with one write(2) as soon as the target ends, and the HTML
 * title it reports; the JSON that out-tpl.c writes with it. */
#include "out.h"
#include "../args.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* ---- Output ------------------------------------------------------------- */

/* The length of the valid UTF-8 sequence at p (1 to 4 of the n > 0 bytes
 * there), or 0 when the byte at p does not start one: a stray continuation
 * byte, an overlong form, a surrogate, a code point past U+10FFFF, or a
 * sequence cut short. */
static size_t utf8_sequence(const unsigned char *p, size_t avail)
{
  unsigned char c = p[0];
  if (c < 0x80)
    return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF; /* range of the second byte */
  if (c >= 0xC2 && c <= 0xDF)
    n = 2;
  else if (c == 0xE0)
    n = 3, lo = 0xA0;
  else if (c == 0xED)
    n = 3, hi = 0x9F;
  else if (c >= 0xE1 && c <= 0xEF)
    n = 3;
  else if (c == 0xF0)
    n = 4, lo = 0x90;
  else if (c == 0xF4)
    n = 4, hi = 0x8F;
  else if (c >= 0xF1 && c <= 0xF3)
    n = 4;
  else
    return 0;
  if (avail < n || p[1] < lo || p[1] > hi)
    return 0;
  for (size_t i = 2; i < n; i++)
    if (p[i] < 0x80 || p[i] > 0xBF)
      return 0;
  return n;
}

/* n bytes at s as a JSON string, always valid UTF-8: quote and backslash
 * escaped, control bytes and DEL as \u00XX, valid UTF-8 as it is, and
 * every other byte as \u00XX, the code point of its value. */
void json_bytes(line *l, const char *s, size_t n)
{
  const unsigned char *p = (const unsigned char *)s, *end = p + n;
  put(l, "\"", 1);
  while (p < end) {
    size_t k = utf8_sequence(p, (size_t)(end - p));
    if (*p == '"' || *p == '\\')
      printf_line(l, "\\%c", *p);
    else if (k == 0 || *p < 0x20 || *p == 0x7F)
      printf_line(l, "\\u%04x", *p);
    else
      put(l, (const char *)p, k);
    p += k ? k : 1;
  }
  put(l, "\"", 1);
}

/* s as a JSON string; null for NULL. */
void json_string(line *l, const char *s)
{
  if (s)
    json_bytes(l, s, strlen(s));
  else
    puts_line(l, "null");
}

/* A view as a JSON string; null for NULL. */
static void json_view(line *l, const rc_view *v)
{
  if (v)
    json_bytes(l, v->ptr, v->len);
  else
    puts_line(l, "null");
}

/* The final response's HTTP version as JSON: "1.1", "2", ...; null when no
 * response arrived. */
static const char *http_version_json(rc_response *r)
{
  rc_hop_info last;
  if (rc_hop(r, -1, &last) != RC_OK)
    return "null";
  switch (last.version) {
  case 10: return "\"1.0\"";
  case 11: return "\"1.1\"";
  case 20: return "\"2\"";
  case 30: return "\"3\"";
  default: return "null";
  }
}

/* A duration as httpx writes it (Go's time.Duration): "850µs", "12.3ms",
 * "1.5s", "2m3.25s"; the number without trailing zeros. */
static void json_duration(line *l, double seconds)
{
  char num[32];
  const char *unit;
  double v;
  long minutes = 0;
  if (seconds < 1e-3)
    v = seconds * 1e6, unit = "\xC2\xB5s"; /* µs */
  else if (seconds < 1.0)
    v = seconds * 1e3, unit = "ms";
  else {
    minutes = (long)(seconds / 60.0);
    v = seconds - 60.0 * (double)minutes, unit = "s";
  }
  snprintf(num, sizeof num, "%.6f", v);
  char *end = num + strlen(num);
  while (end[-1] == '0')
    end--;
  if (end[-1] == '.')
    end--;
  *end = '\0';
  if (minutes)
    printf_line(l, "\"%ldm%s%s\"", minutes, num, unit);
  else
    printf_line(l, "\"%s%s\"", num, unit);
}

/* The wall-clock time as RFC 3339, UTC, with microseconds. */
void json_timestamp(line *l)
{
  struct timespec now;
  struct tm tm;
  char text[40];
  clock_gettime(CLOCK_REALTIME, &now);
  gmtime_r(&now.tv_sec, &tm);
  strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  printf_line(l, "\"%s.%06ldZ\"", text, now.tv_nsec / 1000);
}

/* ---- The page title ----------------------------------------------------- */

#define TITLE_SCAN 8192 /* bytes of the title element looked at */
#define TITLE_MAX  1024 /* bytes of the title written, at most */

/* The first occurrence of needle (ASCII, lower case) in hay[0..n), in any
 * case; NULL if none. */
static const char *find_nocase(const char *hay, size_t n, const char *needle)
{
  size_t k = strlen(needle);
  for (size_t i = 0; i + k <= n; i++)
    if (strncasecmp(hay + i, needle, k) == 0)
      return hay + i;
  return NULL;
}

/* Appends code point cp as UTF-8 (U+FFFD for one that is not a character's). */
static size_t put_utf8(char *out, unsigned long cp)
{
  if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    cp = 0xFFFD;
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xC0 | cp >> 6);
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xE0 | cp >> 12);
    out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | cp >> 18);
  out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
  out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
  out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* The character reference at p (after its '&', n bytes left) into out;
 * returns the bytes of p it took (through ';'), or 0 when it is not one
 * that is decoded: &amp; &lt; &gt; &quot; &apos; &nbsp; and numeric ones. */
static size_t entity(const char *p, size_t n, char *out, size_t *outlen)
{
  static const struct {
    const char *name, *text;
  } named[] = {{"amp;", "&"},   {"lt;", "<"},   {"gt;", ">"},
               {"quot;", "\""}, {"apos;", "'"}, {"nbsp;", " "}};
  for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
    size_t k = strlen(named[i].name);
    if (n >= k && strncasecmp(p, named[i].name, k) == 0) {
      *outlen = strlen(named[i].text);
      memcpy(out, named[i].text, *outlen);
      return k;
    }
  }
  if (n < 3 || p[0] != '#')
    return 0;
  int hexa = p[1] == 'x' || p[1] == 'X';
  size_t i = hexa ? 2 : 1, start = i;
  unsigned long cp = 0;
  for (; i < n && i < start + 8; i++) {
    int d = p[i] >= '0' && p[i] <= '9'                             ? p[i] - '0'
            : hexa && (p[i] | 0x20) >= 'a' && (p[i] | 0x20) <= 'f' ? (p[i] | 0x20) - 'a' + 10
                                                                   : -1;
    if (d < 0)
      break;
    cp = cp * (hexa ? 16u : 10u) + (unsigned long)d;
  }
  if (i == start || i >= n || p[i] != ';')
    return 0;
  *outlen = put_utf8(out, cp);
  return i + 1;
}

/* The text of the first <title> element of an HTML body into out (at most
 * TITLE_MAX bytes, cut at a character's end): character references decoded,
 * white space runs as one space, none at the ends. Returns 0, or -1 when
 * the body has no title. */
static int html_title(rc_view body, char *out, size_t *outlen)
{
  const char *open = find_nocase(body.ptr, body.len, "<title");
  if (!open)
    return -1;
  const char *end = body.ptr + body.len;
  const char *p = memchr(open, '>', (size_t)(end - open));
  if (!p)
    return -1;
  p++;
  size_t room = (size_t)(end - p) < TITLE_SCAN ? (size_t)(end - p) : TITLE_SCAN;
  const char *close = find_nocase(p, room, "</title");
  const char *stop = close ? close : p + room;
  size_t n = 0;
  int space = 0;
  while (p < stop) {
    char buf[8];
    size_t k = 1, blen = 1;
    buf[0] = *p;
    if (*p == '&') {
      size_t taken = entity(p + 1, (size_t)(stop - p - 1), buf, &blen);
      if (taken)
        k = taken + 1;
    }
    p += k;
    if (buf[0] == ' ' || buf[0] == '\t' || buf[0] == '\n' || buf[0] == '\r' || buf[0] == '\f') {
      space = n > 0;
      continue;
    }
    if (n + space + blen > TITLE_MAX)
      break;
    if (space)
      out[n++] = ' ';
    space = 0;
    memcpy(out + n, buf, blen);
    n += blen;
  }
  /* Not cut inside a UTF-8 sequence: drop a lead byte whose sequence did
   * not fit (other invalid bytes are escaped by json_bytes). */
  size_t back = 0;
  while (back < 3 && back < n && ((unsigned char)out[n - 1 - back] & 0xC0) == 0x80)
    back++;
  if (back < n && utf8_sequence((const unsigned char *)out + n - 1 - back, back + 1) == 0 &&
      (unsigned char)out[n - 1 - back] >= 0xC2)
    n -= back + 1;
  *outlen = n;
  return 0;
}

/* ---- Reports ------------------------------------------------------------ */

/* The error field: NULL, or what went wrong. A body cut at the cap is
 * reported by "truncated", a transfer that --stop-on-match ended by
 * "stopped", not as errors. */
const char *out_error(const reading *r, const attempt *a, char *buf, size_t cap)
{
  if (a->how == INTERRUPTED)
    return "interrupted";
  rc_code rc = rc_result(r->resp, a->cc);
  if (rc == RC_E_TRANSFER) {
    snprintf(buf, cap, "transfer failed: %s", a->errbuf[0] ? a->errbuf : curl_easy_strerror(a->cc));
    return buf;
  }
  return rc != RC_OK && rc != RC_TRUNCATED && rc != RC_STOPPED ? rc_strerror(rc) : NULL;
}

/* A header of the final response as a JSON string; null when absent. */
static void json_header(line *l, rc_response *r, const char *name)
{
  rc_view v;
  json_view(l, rc_header(r, -1, name, 0, &v) == RC_OK ? &v : NULL);
}

/* The final response's declared Content-Length; null when absent or not a
 * number. */
static void json_content_length(line *l, rc_response *r)
{
  rc_view v;
  unsigned long long n = 0;
  size_t i = 0;
  if (rc_header(r, -1, "content-length", 0, &v) == RC_OK)
    for (; i < v.len && v.ptr[i] >= '0' && v.ptr[i] <= '9' && n < 1000000000000000000ull; i++)
      n = n * 10 + (unsigned long long)(v.ptr[i] - '0');
  if (i > 0 && i == v.len)
    printf_line(l, "%llu", n);
  else
    puts_line(l, "null");
}

/* The title of an HTML body, from its first bytes; null for other bodies,
 * or without one. */
static void json_title(line *l, rc_response *r, rc_view body)
{
  char title[TITLE_MAX];
  size_t n;
  if (body.len && is_html(r) && html_title(body, title, &n) == 0)
    json_bytes(l, title, n);
  else
    puts_line(l, "null");
}

/* Every hop's status, in order. */
static void json_chain(line *l, rc_response *r)
{
  size_t hops = rc_hop_count(r);
  puts_line(l, "[");
  for (size_t i = 0; i < hops; i++) {
    rc_hop_info hop;
    rc_hop(r, (int)i, &hop);
    printf_line(l, "%s%d", i ? "," : "", hop.status);
  }
  puts_line(l, "]");
}

/* The status of a proxy's reply to CONNECT (the tunnel curl asks for to
 * reach an https target); null when there was none. */
static void json_connect(line *l, const attempt *a)
{
  long code = 0;
  if (a->how != NOT_STARTED)
    curl_easy_getinfo(a->easy, CURLINFO_HTTP_CONNECTCODE, &code);
  if (code)
    printf_line(l, "%ld", code);
  else
    puts_line(l, "null");
}

/* One hit of the matches array; offset NO_OFFSET is null. */
static void json_hit(line *l, int *first, const char *kind, const char *value, size_t offset)
{
  printf_line(l, "%s{\"matcher\":\"%s\",\"value\":", *first ? "" : ",", kind);
  json_string(l, value);
  if (offset == NO_OFFSET)
    puts_line(l, ",\"offset\":null}");
  else
    printf_line(l, ",\"offset\":%zu}", offset);
  *first = 0;
}

/* The matchers that hit: [{"matcher":"status","value":"200","offset":null},
 * {"matcher":"word","value":"admin","offset":1234}, ...]. */
static void json_matches(line *l, const matchers *o, const verdict *v, int status)
{
  int first = 1;
  puts_line(l, "[");
  if (v->status) {
    char code[8];
    snprintf(code, sizeof code, "%d", status);
    json_hit(l, &first, "status", code, NO_OFFSET);
  }
  for (size_t i = 0; i < o->nwords; i++)
    if (v->words[i])
      json_hit(l, &first, "word", o->words[i], v->word_at[i]);
  for (size_t i = 0; i < o->nregexes; i++)
    if (v->regexes[i])
      json_hit(l, &first, "regex", o->regexes[i].text, v->regex_at[i]);
  puts_line(l, "]");
}

/* What the extractors found: {"REGEX": ["value", ...], ...}, those with
 * values only. */
static void json_extracts(line *l, const matchers *o, const reading *r)
{
  int first = 1;
  puts_line(l, "{");
  for (size_t i = 0; i < o->nextracts; i++) {
    size_t n;
    const char *const *value;
    const size_t *len;
    extract_values(r, i, &n, &value, &len);
    if (!n)
      continue;
    puts_line(l, first ? "" : ",");
    json_string(l, o->extracts[i].text);
    puts_line(l, ":[");
    for (size_t k = 0; k < n; k++) {
      puts_line(l, k ? "," : "");
      json_bytes(l, value[k], len[k]);
    }
    puts_line(l, "]");
    first = 0;
  }
  puts_line(l, "}");
}

/* The extractors that may have missed a value, a match in progress having
 * outgrown the window: ["REGEX", ...]; [] for none. */
static void json_extracts_incomplete(line *l, const matchers *o, const reading *r)
{
  int first = 1;
  puts_line(l, "[");
  for (size_t i = 0; i < o->nextracts; i++)
    if (extract_incomplete(r, i)) {
      puts_line(l, first ? "" : ",");
      json_string(l, o->extracts[i].text);
      first = 0;
    }
  puts_line(l, "]");
}

/* Writes the line built in o->line with as few write(2) calls as the
 * kernel allows (one, for a file or a pipe with room); a failure stops
 * the scan (EPIPE: the reader went away). */
void write_line(output *o)
{
  line *l = &o->line;
  if (l->nomem) {
    o->write_error = ENOMEM;
    return;
  }
  if ((o->write_error = write_all(o->fd, l->p, l->len)) == 0)
    out_export(o);
}

/* The fields of the target, as one JSON object and a line break, into
 * l. */
static void json_record(line *l, const reading *rd, const attempt *a, int matched)
{
  rc_response *r = rd->resp;
  int stopped = a->how != NOT_STARTED && rc_result(r, a->cc) == RC_STOPPED;
  char buf[CURL_ERROR_SIZE + 128];
  const char *err = out_error(rd, a, buf, sizeof buf);
  char *final_url = NULL;
  if (a->how != NOT_STARTED)
    curl_easy_getinfo(a->easy, CURLINFO_EFFECTIVE_URL, &final_url);
  rc_view head = {rd->head, rd->head_len};
  double took = a->took;
  l->len = 0;
  puts_line(l, "{\"timestamp\":");
  json_timestamp(l);
  puts_line(l, ",\"input\":");
  json_string(l, a->url);
  puts_line(l, ",\"url\":");
  json_string(l, a->url);
  puts_line(l, ",\"final_url\":");
  json_string(l, final_url);
  puts_line(l, ",\"method\":");
  json_string(l, a->method);
  printf_line(l, ",\"status_code\":%d,\"content_length\":", rc_status(r));
  json_content_length(l, r);
  puts_line(l, ",\"content_type\":");
  json_header(l, r, "content-type");
  puts_line(l, ",\"webserver\":");
  json_header(l, r, "server");
  puts_line(l, ",\"title\":");
  json_title(l, r, head);
  puts_line(l, ",\"chain_status_codes\":");
  json_chain(l, r);
  puts_line(l, ",\"connect_status_code\":");
  json_connect(l, a);
  printf_line(l,
              ",\"http_version\":%s,\"hops\":%zu,\"body_bytes\":%zu,\"truncated\":%s,"
              "\"stopped\":%s,\"encoding\":\"%s\",\"spilled\":%s,\"matched\":%s,\"matches\":",
              http_version_json(r), rc_hop_count(r), rc_body_length(r),
              rc_truncated(r) ? "true" : "false", stopped ? "true" : "false",
              example_encoding_name(rc_body_encoding(r)), rc_body_spilled(r) ? "true" : "false",
              matched ? "true" : "false");
  json_matches(l, rd->g->m, &rd->v, rc_status(r));
  puts_line(l, ",\"extracts\":");
  json_extracts(l, rd->g->m, rd);
  puts_line(l, ",\"extracts_incomplete\":");
  json_extracts_incomplete(l, rd->g->m, rd);
  printf_line(l, ",\"failed\":%s,\"error\":", err ? "true" : "false");
  json_string(l, err);
  printf_line(l, ",\"attempts\":%ld,\"time\":", a->attempts);
  json_duration(l, took);
  printf_line(l, ",\"time_ms\":%.1f}\n", took * 1000.0);
}

void out_target(output *o, const reading *r, const attempt *a, int matched)
{
  json_record(&o->line, r, a, matched);
  write_line(o);
}
