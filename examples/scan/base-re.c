/* scan's regexes: PCRE syntax, as scanners write them (nuclei's RE2 and
 * httpx's are a subset of it), compiled by PCRE2 with its JIT. PCRE2 is the
 * reference for what a regex means and which ones are taken: it runs every
 * regex over header lines, and over the kept body those that the streaming
 * engine (eval-vs.c, which reads the same syntax) does not take: back
 * references, lookarounds, and all of them in a build without Vectorscan.
 * The text is bytes (no UTF mode), NUL bytes included. Both engines read
 * a regex as regex_re2 writes it, with the meaning RE2 gives it. */
#include "base.h"

#include <stdlib.h>
#include <string.h>

/* ---- RE2's meaning in PCRE's syntax --------------------------------------- */

/* Where a regex's text means one thing to RE2 and another to PCRE (and
 * Vectorscan, which reads it as PCRE does), regex_re2 writes what RE2
 * means: $ outside (?m) is the text's end (\z), \s and \S leave out the
 * vertical tab, \v is that tab. It walks the text as PCRE reads it: an
 * escape is two bytes (\c three), \Q..\E is literal, a class runs to its
 * first ] that is not its first byte (nor a POSIX [:name:]'s), (?#...) is
 * a comment, and each group has its own m flag, set by (?m) for the rest
 * of it or by (?m:...) for its own body. */

#define RE2_SPACE "\\t\\n\\f\\r " /* RE2's \s, in a class */

/* Appends n bytes of s at out[*o]. */
static void emit(char *out, size_t *o, const char *s, size_t n)
{
  memcpy(out + *o, s, n);
  *o += n;
}

/* The escape at t[i] (a backslash), in a class or not, onto out; returns
 * the bytes of t it took. */
static size_t re2_escape(const char *t, size_t i, int in_class, char *out, size_t *o)
{
  char c = t[i + 1];
  if (c == 's' || (c == 'S' && !in_class)) {
    emit(out, o, in_class ? "" : c == 's' ? "[" : "[^", in_class ? 0 : c == 's' ? 1 : 2);
    emit(out, o, RE2_SPACE, strlen(RE2_SPACE));
    emit(out, o, "]", !in_class);
    return 2;
  }
  if (c == 'v') {
    emit(out, o, "\\x0b", 4);
    return 2;
  }
  if (c == 'Q') { /* literal up to \E, or the end */
    const char *e = strstr(t + i + 2, "\\E");
    size_t n = e ? (size_t)(e + 2 - (t + i)) : strlen(t + i);
    emit(out, o, t + i, n);
    return n;
  }
  size_t n = !c ? 1 : c == 'c' && t[i + 2] ? 3 : 2;
  emit(out, o, t + i, n);
  return n;
}

/* The class at t[i] (its '['), onto out; returns the bytes it took. */
static size_t re2_class(const char *t, size_t i, char *out, size_t *o)
{
  size_t j = i + 1;
  j += t[j] == '^';
  j += t[j] == ']'; /* a first ] is a member */
  emit(out, o, t + i, j - i);
  while (t[j] && t[j] != ']') {
    const char *posix = t[j] == '[' && t[j + 1] == ':' ? strstr(t + j + 2, ":]") : NULL;
    size_t n = posix ? (size_t)(posix + 2 - (t + j)) : 1;
    if (t[j] == '\\') {
      j += re2_escape(t, j, 1, out, o);
    } else {
      emit(out, o, t + j, n);
      j += n;
    }
  }
  emit(out, o, "]", t[j] == ']');
  return j + (t[j] == ']') - i;
}

/* The group opening at t[i] ('('): its m flag, from the enclosing group's
 * (m); *own set when it is a flag setting of the enclosing group, (?m).
 * Returns the bytes of its opening (past "(?flags:" or "(?flags)"). */
static size_t re2_group(const char *t, size_t i, int m, int *m_out, int *own)
{
  size_t j = i + 1;
  *m_out = m;
  *own = 0;
  if (t[j] != '?')
    return 1;
  int on = 1;
  for (j++; t[j] && strchr("imnsxJU-^", t[j]); j++) {
    if (t[j] == '-')
      on = 0;
    if (t[j] == '^') /* PCRE2's (?^): unset imnsx */
      *m_out = 0;
    if (t[j] == 'm')
      *m_out = on;
  }
  if (t[j] == ')') {
    *own = 1;
    return j + 1 - i;
  }
  if (t[j] == ':')
    return j + 1 - i;
  *m_out = m; /* (?=, (?<name>, (?#...: not flags */
  return 1;
}

char *regex_re2(const char *t, int *line_start)
{
  size_t len = strlen(t);
  char *out = malloc(6 * len + 1); /* \s grows most: 2 bytes to 12 */
  unsigned char *m = malloc(len + 2); /* per open group: its m flag */
  size_t o = 0, depth = 0;
  if (!out || !m) {
    free(out);
    free(m);
    return NULL;
  }
  m[0] = 0;
  if (line_start)
    *line_start = 0;
  for (size_t i = 0; i < len;) {
    if (t[i] == '\\') {
      i += re2_escape(t, i, 0, out, &o);
    } else if (t[i] == '[') {
      i += re2_class(t, i, out, &o);
    } else if (t[i] == '(' && t[i + 1] == '?' && t[i + 2] == '#') {
      const char *e = strchr(t + i, ')');
      size_t n = e ? (size_t)(e + 1 - (t + i)) : len - i;
      emit(out, &o, t + i, n);
      i += n;
    } else if (t[i] == '(') {
      int inner, own;
      size_t n = re2_group(t, i, m[depth], &inner, &own);
      if (own)
        m[depth] = (unsigned char)inner;
      else
        m[++depth] = (unsigned char)inner;
      emit(out, &o, t + i, n);
      i += n;
    } else {
      if (t[i] == ')' && depth > 0)
        depth--;
      if (t[i] == '^' && m[depth] && line_start)
        *line_start = 1;
      if (t[i] == '$' && !m[depth])
        emit(out, &o, "\\z", 2);
      else
        emit(out, &o, t + i, 1);
      i++;
    }
  }
  out[o] = '\0';
  free(m);
  return out;
}

/* ---- Matching ------------------------------------------------------------- */

/* One match data, JIT stack and match context for the whole scan, which
 * runs on one thread; created with the first regex. */
static pcre2_match_data *match_data;
static pcre2_match_context *match_ctx;
static pcre2_jit_stack *jit_stack;

#define JIT_STACK_MAX (1024 * 1024) /* bytes; what deep backtracking may take */

static int match_setup(void)
{
  if (match_data)
    return 0;
  match_data = pcre2_match_data_create(16, NULL);
  match_ctx = pcre2_match_context_create(NULL);
  jit_stack = pcre2_jit_stack_create(32 * 1024, JIT_STACK_MAX, NULL);
  if (!match_data || !match_ctx || !jit_stack)
    return -1;
  pcre2_jit_stack_assign(match_ctx, NULL, jit_stack);
  return 0;
}

/* What a regex makes on its first use rather than when it is read: its
 * JIT code, and the wrapped regex of regex_first_end. Most regexes of a
 * large template set never run (the streaming engine decides them, or no
 * response of their cluster reaches them), and making both for each took
 * a third of the time to load nuclei's official set, and most of the
 * memory its regexes held. */
struct regex_later {
  uint32_t minlength; /* bytes of any match, at least (PCRE2_INFO_MINLENGTH) */
  uint32_t jit;       /* the JIT modes compiled for code (PCRE2_JIT_*) */
  int wrapped;        /* ends was tried */
  pcre2_code *ends;   /* the regex, then a callout; NULL: not made, or it does not wrap */
};

/* What regex_re2 leaves to PCRE2's options: under (?m), ^ also after a
 * newline that ends the text, as in RE2. */
#define RE2_OPTIONS PCRE2_ALT_CIRCUMFLEX

/* re's code, JIT-compiled for mode (PCRE2_JIT_COMPLETE, or
 * PCRE2_JIT_PARTIAL_HARD for a streamed extractor's partial matches) where
 * the JIT can (else it is interpreted). Each mode is compiled on its first
 * use: most regexes never match partially, and the code of a mode takes
 * memory. */
static pcre2_code *code_of(const regex *re, uint32_t mode)
{
  if (!(re->later->jit & mode)) {
    re->later->jit |= mode;
    pcre2_jit_compile(re->code, mode);
  }
  return re->code;
}

/* The same regex, then a callout: where a match ends is seen there (see
 * regex_first_end). Without the optimisations that skip match paths.
 * NULL when it does not wrap, or out of memory. */
static pcre2_code *ends_of(const regex *re)
{
  struct regex_later *l = re->later;
  if (l->wrapped)
    return l->ends;
  l->wrapped = 1;
  char *text = regex_re2(re->text, NULL);
  size_t n = text ? strlen(text) : 0;
  char *wrapped = text ? malloc(n + 16) : NULL;
  if (!wrapped) {
    free(text);
    return NULL;
  }
  memcpy(wrapped, "(?:", 3);
  memcpy(wrapped + 3, text, n);
  memcpy(wrapped + 3 + n, ")(?C'end')", 11);
  free(text);
  int err;
  PCRE2_SIZE at;
  l->ends = pcre2_compile((PCRE2_SPTR)wrapped, n + 13,
                          RE2_OPTIONS | PCRE2_USE_OFFSET_LIMIT | PCRE2_NO_AUTO_POSSESS |
                              PCRE2_NO_DOTSTAR_ANCHOR,
                          &err, &at, NULL);
  free(wrapped);
  if (l->ends)
    pcre2_jit_compile(l->ends, PCRE2_JIT_COMPLETE);
  return l->ends;
}

int regex_compile(regex *re, const char *text, char *msg, size_t cap)
{
  memset(re, 0, sizeof *re);
  re->text = text;
  if (match_setup() != 0 || !(re->later = calloc(1, sizeof *re->later))) {
    snprintf(msg, cap, "out of memory");
    return -1;
  }
  int err;
  PCRE2_SIZE at = 0;
  char *re2 = regex_re2(text, NULL);
  if (!re2) {
    snprintf(msg, cap, "out of memory");
    free(re->later);
    re->later = NULL;
    return -1;
  }
  re->code = pcre2_compile((PCRE2_SPTR)re2, PCRE2_ZERO_TERMINATED, RE2_OPTIONS, &err, &at, NULL);
  free(re2);
  if (!re->code) {
    /* The error and its offset in the text as written, when it has one. */
    int err0;
    PCRE2_SIZE at0;
    pcre2_code *plain = pcre2_compile((PCRE2_SPTR)text, PCRE2_ZERO_TERMINATED, 0, &err0, &at0, NULL);
    if (!plain) {
      err = err0;
      at = at0;
    }
    pcre2_code_free(plain);
    PCRE2_UCHAR what[256];
    pcre2_get_error_message(err, what, sizeof what);
    snprintf(msg, cap, "%s at offset %zu", (const char *)what, (size_t)at);
    free(re->later);
    re->later = NULL;
    return -1;
  }
  pcre2_pattern_info(re->code, PCRE2_INFO_CAPTURECOUNT, &re->groups);
  pcre2_pattern_info(re->code, PCRE2_INFO_MAXLOOKBEHIND, &re->lookbehind);
  pcre2_pattern_info(re->code, PCRE2_INFO_MINLENGTH, &re->later->minlength);
  return 0;
}

void regex_free(regex *re)
{
  pcre2_code_free(re->code);
  if (re->later)
    pcre2_code_free(re->later->ends);
  free(re->later);
  re->code = NULL;
  re->later = NULL;
}

/* The end of the regexes: what they share goes once the last is freed. */
void regex_done(void)
{
  pcre2_match_data_free(match_data);
  pcre2_match_context_free(match_ctx);
  pcre2_jit_stack_free(jit_stack);
  match_data = NULL;
  match_ctx = NULL;
  jit_stack = NULL;
}

/* Whether no match of re fits in text from byte start on: it is shorter
 * than any match (as pcre2_match would find, but before its call). */
static int too_short(const regex *re, rc_view text, size_t start)
{
  return start <= text.len && text.len - start < re->later->minlength;
}

/* The first match of re in text from byte start on: 1 with its bounds in
 * *so and *eo, or 0 when there is none (or PCRE2 gave up: its match or
 * depth limit, which a pathological regex over a large body can reach). */
static int regex_at(const regex *re, rc_view text, size_t start, size_t *so, size_t *eo)
{
  if (too_short(re, text, start))
    return 0;
  int rc = pcre2_match(code_of(re, PCRE2_JIT_COMPLETE), (PCRE2_SPTR)text.ptr, text.len, start, 0,
                       match_data, match_ctx);
  if (rc < 0)
    return 0;
  PCRE2_SIZE *ov = pcre2_get_ovector_pointer(match_data);
  *so = ov[0];
  *eo = ov[1];
  return 1;
}

int regex_next(const regex *re, rc_view text, size_t start, uint32_t flags, long g,
               size_t bounds[4])
{
  if (!(flags & PCRE2_PARTIAL_HARD) && too_short(re, text, start))
    return PCRE2_ERROR_NOMATCH; /* a partial match needs no length */
  /* The scan's match data keeps 16 groups; a later group needs its own. */
  pcre2_match_data *md = (uint32_t)g < pcre2_get_ovector_count(match_data)
                             ? match_data
                             : pcre2_match_data_create_from_pattern(re->code, NULL);
  if (!md)
    return PCRE2_ERROR_NOMEMORY;
  uint32_t mode = flags & PCRE2_PARTIAL_HARD ? PCRE2_JIT_PARTIAL_HARD : PCRE2_JIT_COMPLETE;
  int rc = pcre2_match(code_of(re, mode), (PCRE2_SPTR)text.ptr, text.len, start, flags, md,
                       match_ctx);
  if (rc >= 0 || rc == PCRE2_ERROR_PARTIAL) {
    /* The pairs of groups that took no part, up to re's last, are unset. */
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    int group = rc != PCRE2_ERROR_PARTIAL && g >= 0 && (uint32_t)g <= re->groups;
    bounds[0] = ov[0];
    bounds[1] = ov[1];
    bounds[2] = group ? ov[2 * g] : PCRE2_UNSET;
    bounds[3] = group ? ov[2 * g + 1] : PCRE2_UNSET;
  }
  if (md != match_data)
    pcre2_match_data_free(md);
  return rc;
}

int regex_hit(const regex *re, rc_view text)
{
  size_t so, eo;
  return regex_at(re, text, 0, &so, &eo);
}

/* The callout at the end of the wrapped regex: a match ending at or
 * before the limit is one (0: go on to succeed), any other is not (1:
 * backtrack, for the next). The regex's own callouts, if any, go on. */
static int at_end(pcre2_callout_block *cb, void *limit)
{
  if (cb->callout_string_length != 3 || memcmp(cb->callout_string, "end", 3) != 0)
    return 0;
  return cb->current_position <= *(const size_t *)limit ? 0 : 1;
}

/* Whether a match of re ends at or before limit, in the whole text. */
static int ends_by(const regex *re, rc_view text, size_t limit)
{
  pcre2_set_callout(match_ctx, at_end, &limit);
  pcre2_set_offset_limit(match_ctx, limit); /* no match starts past it */
  int rc = pcre2_match(ends_of(re), (PCRE2_SPTR)text.ptr, text.len, 0, 0, match_data, match_ctx);
  pcre2_set_callout(match_ctx, NULL, NULL);
  pcre2_set_offset_limit(match_ctx, PCRE2_UNSET);
  return rc >= 0;
}

/* Where the first match of re to end, ends (re matches text), as a stream
 * reports it: the least end of any match, which need not be the end of
 * the leftmost match ("a+b|c" in "aaac" ends first at the c). Found by
 * halving, between 0 and the leftmost match's end, with the whole text in
 * view (so \b, $ and lookaheads see what follows). Without the wrapped
 * code (a regex that does not wrap, such as one with \Q unterminated),
 * the leftmost match's end. */
size_t regex_first_end(const regex *re, rc_view text)
{
  size_t so, hi;
  if (!regex_at(re, text, 0, &so, &hi))
    return NO_OFFSET;
  if (!ends_of(re))
    return hi;
  size_t lo = 0;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (ends_by(re, text, mid))
      hi = mid;
    else
      lo = mid + 1;
  }
  return hi;
}
