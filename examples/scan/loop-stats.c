/* scan --stats: nuclei's statistics line on stderr, every --stats-interval
 * seconds and once more at the end, in nuclei's shape:
 *
 *   [0:00:05] | Templates: 958 | Hosts: 20 | RPS: 4211 | Matched: 3 |
 *   Errors: 0 | Requests: 21055/21500 (97%)
 *
 * (one line). Requests counts the requests ended; their total is known
 * when every target was given with -u (targets x the distinct requests
 * of the templates, or x 1 without -t); a list read as it goes has none,
 * and the line ends at the count. Hosts is that many targets, or those
 * read so far. */
#include "loop.h"

/* The targets of this shard among the -u ones: K, K+N, ... of count. */
static unsigned long shard_targets(const scan *s)
{
  unsigned long n = s->src.count, k = s->opt->shard, of = s->opt->shards;
  return n >= k ? (n - k) / of + 1 : 0;
}

void stats_line(scan *s, int final)
{
  double t = seconds_since(&s->start);
  if (!s->opt->stats || (!final && t < s->next_stats))
    return;
  s->next_stats = t + (double)s->opt->stats_interval_ms / 1000.0;
  unsigned long secs = (unsigned long)t;
  int known = s->src.in == NULL;
  unsigned long hosts = known ? shard_targets(s) : s->src.seen;
  unsigned long total = hosts * (s->tpl ? s->plan->nclusters : 1);
  fprintf(stderr, "[%lu:%02lu:%02lu] | Templates: %zu | Hosts: %lu | RPS: %lu | Matched: %lu | "
          "Errors: %lu | Requests: %lu",
          secs / 3600, secs / 60 % 60, secs % 60, s->tpl ? s->tpl->n : (size_t)0, hosts,
          t > 0 ? (unsigned long)((double)s->done / t) : 0UL,
          s->tpl ? s->out.matches : s->matched, s->errors, s->done);
  if (known)
    fprintf(stderr, "/%lu (%lu%%)", total, total ? s->done * 100 / total : 100UL);
  fputc('\n', stderr);
  fflush(stderr);
}

double stats_wait(const scan *s)
{
  double left = s->next_stats - seconds_since(&s->start);
  return left > 0 ? left : 0;
}
