/* Fuzz target: the header callback fed arbitrary lines, with body writes and
 * reads in between, then every reader checked against a model of what was
 * accepted.
 *
 * Input: two bytes of settings, then lines (split after each LF, which stays
 * part of its line):
 *   byte 0  bits 0-2 max_hops, bits 3-4 pool chunk size, bit 5 decoding
 *   byte 1  bits 0-2 max_header_bytes, bits 3-4 max_body, bits 5-6 policy
 *   a line starting with 0xFF: the rest of it goes to rc_write_cb (body)
 *   a line starting with 0xFD: the same without its LF
 *   a line starting with 0xFE: every reader is checked at that point
 *   any other line goes to rc_header_cb.
 * Feeding stops at the first callback that refuses its bytes, as curl
 * would. The whole sequence then runs a second time on the same response
 * after rc_response_reset, and must come out the same. */
#include <limits.h>
#include <string.h>

#include "fill_alloc.h"
#include "fuzz.h"
#include "response.h"
#include "util.h"

#define MAX_NAME 64

typedef struct mhop {
  size_t off;  /* header block within the raw bytes */
  size_t hlen; /* header block bytes (status line through blank line) */
  size_t tlen; /* trailer bytes after it */
  int ended;   /* the blank line was seen */
} mhop;

typedef struct mline {
  size_t off, len; /* within acc */
  size_t hop;
  int trailer;
} mline;

/* What the response should hold, built from the callbacks' answers. */
typedef struct model {
  rc_limits lim;
  uint8_t *acc; /* every accepted header line, in order */
  size_t acc_len;
  mhop *hops;
  size_t nhops;
  mline *lines;
  size_t nlines;
  uint8_t *body; /* the last hop's body, while it is kept as received */
  size_t body_len;
  int body_known; /* body holds the expected bytes (not decoded) */
  rc_code failed; /* result after a refused callback, else RC_OK */
} model;

static int is_blank_line(const uint8_t *s, size_t n)
{
  return (n == 1 && s[0] == '\n') || (n == 2 && s[0] == '\r' && s[1] == '\n');
}

static int starts_status(const uint8_t *s, size_t n)
{
  return n >= 5 && memcmp(s, "HTTP/", 5) == 0;
}

static int in_range(const char *p, size_t len, const char *lo, size_t lo_len)
{
  return p >= lo && len <= lo_len && (size_t)(p - lo) <= lo_len - len;
}

static int same_view(rc_view a, rc_view b)
{
  return a.len == b.len && (a.len == 0 || a.ptr == b.ptr);
}

/* A header value as returned: never NULL, no white space at either end. */
static void check_value(rc_view v, const char *lo, size_t lo_len)
{
  FZ_CHECK(v.ptr != NULL);
  if (v.len == 0)
    return;
  FZ_CHECK(in_range(v.ptr, v.len, lo, lo_len));
  char first = v.ptr[0], last = v.ptr[v.len - 1];
  FZ_CHECK(first != ' ' && first != '\t' && first != '\r' && first != '\n');
  FZ_CHECK(last != ' ' && last != '\t' && last != '\r' && last != '\n');
}

static const char *const fixed_names[] = {
    "Content-Length",  "content-encoding",  "Location", "Set-Cookie", "X", "",
    "HTTP/1.1 200 OK", "Transfer-Encoding", "Trailer",
};
#define N_FIXED (sizeof fixed_names / sizeof fixed_names[0])

/* The name of a header line ("Name: value"), when it has one that a lookup
 * must find: copied NUL-terminated into name. */
static int line_name(const uint8_t *s, size_t n, char name[MAX_NAME + 1])
{
  if (n == 0 || s[0] == ' ' || s[0] == '\t')
    return 0; /* a continuation line */
  size_t end = n;
  while (end > 0 &&
         (s[end - 1] == '\r' || s[end - 1] == '\n' || s[end - 1] == ' ' || s[end - 1] == '\t'))
    end--;
  const uint8_t *colon = memchr(s, ':', end);
  if (!colon || (size_t)(colon - s) > MAX_NAME || memchr(s, '\0', (size_t)(colon - s)))
    return 0;
  memcpy(name, s, (size_t)(colon - s));
  name[colon - s] = '\0';
  return 1;
}

/* Looks up every name of lines [from, to) of a block and checks that it is
 * found, until a line that may end the block for the lookup (one starting
 * with CR: garbage such as a lone CR before the CRLF). */
static void check_names_from_lines(const rc_response *r, const model *m, size_t hop, int trailers,
                                   const rc_hop_info *hi)
{
  for (size_t i = 0; i < m->nlines; i++) {
    const mline *l = &m->lines[i];
    if (l->hop != hop || l->trailer != trailers)
      continue;
    if (!trailers && l->off == m->hops[hop].off)
      continue; /* the hop's first line */
    const uint8_t *s = m->acc + l->off;
    if (l->len > 0 && (s[0] == '\r' || s[0] == '\n'))
      break;
    char name[MAX_NAME + 1];
    if (!line_name(s, l->len, name))
      continue;
    rc_view v;
    rc_code rc = trailers ? rc_trailer(r, name, 0, &v) : rc_header(r, (int)hop, name, 0, &v);
    FZ_CHECK(rc == RC_OK);
    if (trailers)
      check_value(v, hi->trailers.ptr, hi->trailers.len);
    else
      check_value(v, hi->raw.ptr, hi->raw.len);
  }
}

/* Every reader, against the model. resp is not const: rc_full_response
 * caches. */
static void check_readers(rc_response *r, const model *m)
{
  size_t count = rc_hop_count(r);
  FZ_CHECK(count == m->nhops);
  FZ_CHECK(count <= m->lim.max_hops);

  /* The raw block is every accepted header line, in order. */
  const char *base = rc__buf_data(&r->hops.raw);
  FZ_CHECK(r->hops.raw.len == m->acc_len);
  FZ_CHECK(m->acc_len == 0 || memcmp(base, m->acc, m->acc_len) == 0);

  rc_hop_info info[2];
  for (long i = -(long)count - 2; i <= (long)count + 2; i++) {
    rc_hop_info *hi = &info[0];
    memset(hi, 0x5a, sizeof *hi);
    rc_code rc = rc_hop(r, (int)i, hi);
    int valid = i >= 0 ? (size_t)i < count : (size_t)-i <= count;
    if (!valid) {
      FZ_CHECK(rc == RC_E_RANGE);
      rc_view v;
      FZ_CHECK(rc_header(r, (int)i, "Content-Length", 0, &v) == RC_E_RANGE);
      continue;
    }
    FZ_CHECK(rc == RC_OK);
    size_t idx = i >= 0 ? (size_t)i : count - (size_t)-i;
    const mhop *mh = &m->hops[idx];
    FZ_CHECK(hi->raw.ptr && hi->reason.ptr && hi->trailers.ptr);
    FZ_CHECK(hi->raw.len == mh->hlen);
    FZ_CHECK(hi->trailers.len == mh->tlen);
    if (hi->raw.len)
      FZ_CHECK(hi->raw.ptr == base + mh->off);
    if (hi->trailers.len)
      FZ_CHECK(hi->trailers.ptr == base + mh->off + mh->hlen);
    FZ_CHECK(in_range(hi->raw.ptr, hi->raw.len, base, m->acc_len) || hi->raw.len == 0);
    FZ_CHECK(hi->reason.len == 0 ||
             in_range(hi->reason.ptr, hi->reason.len, hi->raw.ptr, hi->raw.len));
    FZ_CHECK((hi->is_final != 0) == (idx == count - 1));
    FZ_CHECK(hi->status >= 0 && hi->status <= 999);
    FZ_CHECK(hi->version >= 0 && hi->version <= 99);
    if (!starts_status(m->acc + mh->off, mh->hlen))
      FZ_CHECK(hi->status == 0 && hi->version == 0);
    if (hi->reason.len) {
      char c0 = hi->reason.ptr[0], cl = hi->reason.ptr[hi->reason.len - 1];
      FZ_CHECK(c0 != ' ' && cl != ' ' && cl != '\r' && cl != '\n');
    }
    if (i < 0) {
      /* The same hop as its positive index. */
      rc_hop_info *pos = &info[1];
      FZ_CHECK(rc_hop(r, (int)idx, pos) == RC_OK);
      FZ_CHECK(pos->status == hi->status && pos->version == hi->version);
      FZ_CHECK(pos->is_final == hi->is_final);
      FZ_CHECK(same_view(pos->raw, hi->raw));
      FZ_CHECK(same_view(pos->reason, hi->reason));
      FZ_CHECK(same_view(pos->trailers, hi->trailers));
      continue;
    }
    for (size_t k = 0; k < N_FIXED; k++) {
      for (size_t nth = 0; nth < 4; nth++) {
        rc_view v;
        rc = rc_header(r, (int)i, fixed_names[k], nth, &v);
        FZ_CHECK(rc == RC_OK || rc == RC_E_NOT_FOUND);
        if (rc != RC_OK)
          break;
        check_value(v, hi->raw.ptr, hi->raw.len);
      }
    }
    check_names_from_lines(r, m, idx, 0, hi);
    if (idx == count - 1)
      check_names_from_lines(r, m, idx, 1, hi);
  }

  rc_view v;
  FZ_CHECK(rc_hop(r, INT_MIN, &info[0]) == RC_E_RANGE);
  FZ_CHECK(rc_header(r, INT_MIN, "X", 0, &v) == RC_E_RANGE);
  FZ_CHECK(rc_hop(r, INT_MAX, &info[0]) == RC_E_RANGE);
  int status = rc_status(r);
  if (count == 0) {
    FZ_CHECK(status == 0);
    FZ_CHECK(rc_trailer(r, "X", 0, &v) == RC_E_RANGE);
  } else {
    rc_hop_info last;
    FZ_CHECK(rc_hop(r, -1, &last) == RC_OK);
    FZ_CHECK(status == last.status);
    for (size_t k = 0; k < N_FIXED; k++) {
      for (size_t nth = 0; nth < 4; nth++) {
        rc_code rc = rc_trailer(r, fixed_names[k], nth, &v);
        FZ_CHECK(rc == RC_OK || rc == RC_E_NOT_FOUND);
        if (rc != RC_OK)
          break;
        check_value(v, last.trailers.ptr, last.trailers.len);
      }
    }
  }
  FZ_CHECK(rc_header(r, 0, NULL, 0, &v) == RC_E_INVAL);

  /* The body. */
  rc_view body = rc_body(r);
  FZ_CHECK(body.ptr != NULL && body.ptr[body.len] == '\0');
  FZ_CHECK(body.len <= m->lim.max_body);
  if (m->body_known) {
    FZ_CHECK(body.len == m->body_len);
    FZ_CHECK(body.len == 0 || memcmp(body.ptr, m->body, body.len) == 0);
  }
  size_t dlen = (size_t)-1;
  char *dup = rc_body_dup(r, &dlen);
  FZ_CHECK(dup != NULL && dlen == body.len && dup[dlen] == '\0');
  FZ_CHECK(memcmp(dup, body.ptr, dlen) == 0);
  free(dup);
  rc_view raw = rc_raw_body(r);
  FZ_CHECK(raw.ptr != NULL && raw.len == 0); /* max_raw is 0 here */

  /* The full response: the last hop's header block, then the body. */
  rc_view full;
  rc_code rc = rc_full_response(r, &full);
  dup = rc_full_response_dup(r, &dlen);
  if (count == 0) {
    FZ_CHECK(rc == RC_E_RANGE);
    FZ_CHECK(dup == NULL);
  } else {
    rc_hop_info last;
    FZ_CHECK(rc_hop(r, -1, &last) == RC_OK);
    FZ_CHECK(rc == RC_OK);
    FZ_CHECK(full.ptr != NULL && full.len == last.raw.len + body.len);
    FZ_CHECK(full.ptr[full.len] == '\0');
    FZ_CHECK(memcmp(full.ptr, last.raw.ptr, last.raw.len) == 0);
    FZ_CHECK(memcmp(full.ptr + last.raw.len, body.ptr, body.len) == 0);
    rc_view again;
    FZ_CHECK(rc_full_response(r, &again) == RC_OK);
    FZ_CHECK(again.ptr == full.ptr && again.len == full.len);
    FZ_CHECK(dup != NULL && dlen == full.len && dup[dlen] == '\0');
    FZ_CHECK(memcmp(dup, full.ptr, dlen) == 0);
  }
  free(dup);

  /* The result. */
  rc_code res = rc_result(r, CURLE_OK);
  FZ_CHECK(rc_strerror(res) != NULL);
  if (m->failed != RC_OK) {
    FZ_CHECK(res == m->failed);
  } else if (count == 0 && rc_body_length(r) == 0) {
    FZ_CHECK(res == RC_E_NO_RESPONSE); /* nothing received */
    FZ_CHECK(rc_result(r, CURLE_WRITE_ERROR) == RC_E_TRANSFER);
  } else {
    FZ_CHECK(res == RC_OK || res == RC_TRUNCATED || res == RC_E_DECODE);
    FZ_CHECK((res == RC_TRUNCATED) == (rc_truncated(r) != 0));
    if (res == RC_OK)
      FZ_CHECK(rc_result(r, CURLE_WRITE_ERROR) == RC_E_TRANSFER);
  }
  if (count > 0) {
    FZ_CHECK(rc_response_set_limits(r, &m->lim) == RC_E_BUSY);
    FZ_CHECK(rc_response_set_decoding(r, 0) == RC_E_BUSY);
  }
}

/* One header line through the callback, and the model updated from the
 * answer. Returns 0 once the response refused it. */
static int header_line(rc_response *r, model *m, const uint8_t *s, size_t n)
{
  mhop *cur = m->nhops ? &m->hops[m->nhops - 1] : NULL;
  int starts = !cur || (cur->ended && starts_status(s, n));
  size_t hop_bytes = starts ? n : cur->hlen + cur->tlen + n;

  size_t ret = rc_header_cb((char *)s, 1, n, r);
  if (ret != n) {
    FZ_CHECK(ret == CURL_WRITEFUNC_ERROR);
    rc_code res = rc_result(r, CURLE_OK);
    FZ_CHECK(res == RC_E_HEADER_CAP || res == RC_E_HOP_CAP);
    if (res == RC_E_HOP_CAP)
      FZ_CHECK(starts && m->nhops == m->lim.max_hops);
    else
      FZ_CHECK(hop_bytes > m->lim.max_header_bytes);
    FZ_CHECK(rc_hop_count(r) == m->nhops);
    m->failed = res;
    return 0;
  }
  /* Accepted: within both caps. */
  FZ_CHECK(hop_bytes <= m->lim.max_header_bytes);
  int trailer = 0;
  if (starts) {
    FZ_CHECK(m->nhops < m->lim.max_hops);
    cur = &m->hops[m->nhops++];
    cur->off = m->acc_len;
    cur->hlen = n;
    cur->tlen = 0;
    cur->ended = 0;
    /* A new hop starts without a body. */
    m->body_len = 0;
    m->body_known = 1;
    FZ_CHECK(rc_body(r).len == 0 && !rc_truncated(r));
  } else if (!cur->ended) {
    cur->hlen += n;
    cur->ended = is_blank_line(s, n);
  } else {
    cur->tlen += n;
    trailer = 1;
  }
  FZ_CHECK(rc_hop_count(r) == m->nhops);
  m->lines[m->nlines].off = m->acc_len;
  m->lines[m->nlines].len = n;
  m->lines[m->nlines].hop = m->nhops - 1;
  m->lines[m->nlines].trailer = trailer;
  m->nlines++;
  memcpy(m->acc + m->acc_len, s, n);
  m->acc_len += n;
  return 1;
}

/* Body bytes through the write callback. Returns 0 once refused. */
static int body_write(rc_response *r, model *m, const uint8_t *s, size_t n)
{
  size_t before = rc_body(r).len;
  int was_truncated = rc_truncated(r);
  size_t ret = rc_write_cb((char *)s, 1, n, r);
  rc_view body = rc_body(r);
  FZ_CHECK(body.len <= m->lim.max_body);
  if (rc_body_encoding(r) == RC_ENC_DECODED)
    m->body_known = 0;
  if (n == 0) {
    FZ_CHECK(ret == 0 && body.len == before);
    return 1;
  }
  if (ret != n) {
    FZ_CHECK(ret == CURL_WRITEFUNC_ERROR);
    rc_code res = rc_result(r, CURLE_OK);
    FZ_CHECK(res != RC_OK && res != RC_E_HEADER_CAP && res != RC_E_HOP_CAP);
    FZ_CHECK(res != RC_E_NOMEM && res != RC_E_TIMEOUT);
    m->failed = res;
  }
  if (was_truncated) {
    FZ_CHECK(body.len == before); /* draining */
    FZ_CHECK(ret == n);
  }
  FZ_CHECK(body.len >= before);
  if (rc_truncated(r) && !was_truncated)
    FZ_CHECK(body.len == m->lim.max_body);
  if (m->body_known) {
    size_t added = body.len - before;
    FZ_CHECK(added <= n);
    FZ_CHECK(memcmp(body.ptr + before, s, added) == 0);
    if (ret == n && !rc_truncated(r))
      FZ_CHECK(added == n);
    memcpy(m->body + m->body_len, s, added);
    m->body_len += added;
  }
  return ret == n;
}

/* Feeds every line of the input; then checks every reader. */
static void run_pass(rc_response *r, model *m, const uint8_t *data, size_t size)
{
  m->acc_len = m->nhops = m->nlines = m->body_len = 0;
  m->body_known = 1;
  m->failed = RC_OK;
  fz_in in = {data, size};
  while (in.n > 0) {
    size_t len;
    const uint8_t *line = fz_line(&in, &len);
    if (line + len < data + size)
      len++; /* the LF stays part of the line */
    int go;
    if (len > 0 && line[0] == 0xFF) {
      go = body_write(r, m, line + 1, len - 1);
    } else if (len > 0 && line[0] == 0xFD) {
      go = body_write(r, m, line + 1, len - 1 - (line[len - 1] == '\n'));
    } else if (len > 0 && line[0] == 0xFE) {
      check_readers(r, m);
      go = 1;
    } else {
      go = header_line(r, m, line, len);
    }
    if (!go)
      break;
  }
  check_readers(r, m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static const size_t hops_v[8] = {1, 2, 3, 4, 5, 8, 16, SIZE_MAX};
  static const size_t header_v[8] = {0, 1, 20, 64, 256, 4096, 65536, SIZE_MAX};
  static const size_t body_v[4] = {0, 8, 64, RC_DEFAULT_MAX_BODY};
  static const size_t chunk_v[4] = {1, 7, 100, RC_DEFAULT_CHUNK_SIZE};

  fz_in in = {data, size};
  unsigned b0 = fz_u8(&in), b1 = fz_u8(&in);

  model m;
  memset(&m, 0, sizeof m);
  rc_limits_init(&m.lim);
  m.lim.max_hops = hops_v[b0 & 7];
  m.lim.max_header_bytes = header_v[b1 & 7];
  m.lim.max_body = body_v[(b1 >> 3) & 3];
  m.lim.on_cap = (rc_cap_policy)(((b1 >> 5) & 3) % 3);
  int decode = (b0 >> 5) & 1;

  /* Room for the worst case: every byte a line of its own. */
  size_t cap = in.n + 1;
  m.acc = malloc(cap);
  m.body = malloc(cap);
  m.hops = malloc(cap * sizeof *m.hops);
  m.lines = malloc(cap * sizeof *m.lines);
  FZ_CHECK(m.acc && m.body && m.hops && m.lines);

  counting_alloc ca;
  counting_alloc_init(&ca);
  rc_pool_config cfg;
  rc_pool_config_init(&cfg);
  fz_fill_alloc fa;
  fz_fill_init(&fa, &ca.a);
  cfg.allocator = &fa.a;
  cfg.chunk_size = chunk_v[(b0 >> 3) & 3];
  rc_pool *pool = NULL;
  FZ_CHECK(rc_pool_new(&cfg, &pool) == RC_OK);
  rc_response *r = NULL;
  FZ_CHECK(rc_response_new(pool, &m.lim, &r) == RC_OK);
  /* The limits as the response sees them (sizes clamped). */
  if (m.lim.max_hops > SIZE_MAX / 2 / sizeof(rc__hop))
    m.lim.max_hops = SIZE_MAX / 2 / sizeof(rc__hop);
  if (m.lim.max_header_bytes > SIZE_MAX / 2)
    m.lim.max_header_bytes = SIZE_MAX / 2;
  FZ_CHECK(rc_response_set_decoding(r, decode) == RC_OK);

  run_pass(r, &m, in.p, in.n);
  size_t hops1 = m.nhops, acc1 = m.acc_len;
  rc_code res1 = rc_result(r, CURLE_OK);
  rc_view b = rc_body(r);
  char *body1 = malloc(b.len + 1);
  FZ_CHECK(body1 != NULL);
  memcpy(body1, b.ptr, b.len + 1);
  size_t body1_len = b.len;

  /* Reset: empty, nothing held, limits kept; then the same again. */
  rc_response_reset(r);
  rc_pool_stats st;
  rc_pool_stats_get(pool, &st);
  FZ_CHECK(st.bytes_in_use == 0);
  FZ_CHECK(rc_hop_count(r) == 0 && rc_body(r).len == 0 && rc_status(r) == 0);
  FZ_CHECK(rc_result(r, CURLE_OK) == RC_E_NO_RESPONSE); /* nothing received yet */
  rc_hop_info hi;
  FZ_CHECK(rc_hop(r, -1, &hi) == RC_E_RANGE && rc_hop(r, 0, &hi) == RC_E_RANGE);
  rc_view v;
  FZ_CHECK(rc_full_response(r, &v) == RC_E_RANGE);
  FZ_CHECK(rc_full_response_dup(r, NULL) == NULL);
  run_pass(r, &m, in.p, in.n);
  FZ_CHECK(m.nhops == hops1 && m.acc_len == acc1);
  FZ_CHECK(rc_result(r, CURLE_OK) == res1);
  b = rc_body(r);
  FZ_CHECK(b.len == body1_len && memcmp(b.ptr, body1, b.len) == 0);
  free(body1);

  rc_response_free(r);
  rc_pool_free(pool);
  FZ_CHECK(ca.live == 0);
  free(m.acc);
  free(m.body);
  free(m.hops);
  free(m.lines);
  return 0;
}
