/* The taskstats interface for one thread group (TASKSTATS_CMD_GET, TASKSTATS_CMD_ATTR_TGID):
 * whether the family resolves here, what one request costs (thread CPU clock, N requests
 * back to back), and, with a directory as third argument, the raw answers for the parser's
 * fixtures: family_reply.bin, tgid_reply_a.bin (first answer), tgid_reply_b.bin (after
 * SLEEP_MS, during which the caller makes the process run), tgid_reply_eperm.bin (when the
 * kernel refuses), and the fields of the first answer as the parser should read them.
 * Build: gcc -O2 -o /tmp/proc_taskstats docs/bench/proc_taskstats.c
 * Usage: proc_taskstats PID [N] [FIXTURE_DIR] [SLEEP_MS] */
#include <errno.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/taskstats.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double thread_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

struct req { struct nlmsghdr n; struct genlmsghdr g; char attr[64]; };

static int ask(int fd, int type, int cmd, int atype, const void *data, int len, int seq) {
  struct req r;
  memset(&r, 0, sizeof r);
  r.n.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
  r.n.nlmsg_type = type;
  r.n.nlmsg_flags = NLM_F_REQUEST;
  r.n.nlmsg_seq = seq;
  r.g.cmd = cmd;
  r.g.version = 1;
  struct nlattr *a = (struct nlattr *)((char *)&r + r.n.nlmsg_len);
  a->nla_type = atype;
  a->nla_len = NLA_HDRLEN + len;
  memcpy((char *)a + NLA_HDRLEN, data, len);
  r.n.nlmsg_len += NLA_ALIGN(a->nla_len);
  struct sockaddr_nl k = {.nl_family = AF_NETLINK};
  return sendto(fd, &r, r.n.nlmsg_len, 0, (struct sockaddr *)&k, sizeof k);
}

static void save(const char *dir, const char *name, const void *b, int n) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "wb");
  if (f) { fwrite(b, 1, n, f); fclose(f); }
}

/* The struct taskstats inside an answer: AGGR_TGID { TGID, STATS }. */
static struct taskstats *stats_of(char *buf) {
  struct nlattr *aggr = (void *)((char *)NLMSG_DATA((struct nlmsghdr *)buf) + GENL_HDRLEN);
  struct nlattr *tgid = (void *)((char *)aggr + NLA_HDRLEN);
  struct nlattr *st = (void *)((char *)tgid + NLA_ALIGN(tgid->nla_len));
  return (void *)((char *)st + NLA_HDRLEN);
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: proc_taskstats PID [N] [FIXTURE_DIR] [SLEEP_MS]\n"); return 2; }
  int pid = atoi(argv[1]), n = argc > 2 ? atoi(argv[2]) : 10000;
  const char *dir = argc > 3 ? argv[3] : NULL;
  int sleep_ms = argc > 4 ? atoi(argv[4]) : 1000;
  printf("offsets: cpu_count %zu cpu_delay_total %zu cpu_run_virtual_total %zu nvcsw %zu nivcsw %zu; sizeof %zu\n",
         offsetof(struct taskstats, cpu_count), offsetof(struct taskstats, cpu_delay_total),
         offsetof(struct taskstats, cpu_run_virtual_total), offsetof(struct taskstats, nvcsw),
         offsetof(struct taskstats, nivcsw), sizeof(struct taskstats));
  int fd = socket(AF_NETLINK, SOCK_RAW, NETLINK_GENERIC);
  char buf[4096];
  if (ask(fd, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, CTRL_ATTR_FAMILY_NAME, TASKSTATS_GENL_NAME,
          strlen(TASKSTATS_GENL_NAME) + 1, 1) < 0) { perror("send"); return 1; }
  int len = recv(fd, buf, sizeof buf, 0);
  struct nlmsghdr *h = (void *)buf;
  if (h->nlmsg_type == NLMSG_ERROR) { printf("family: error %d\n", ((struct nlmsgerr *)NLMSG_DATA(h))->error); return 1; }
  if (dir) save(dir, "family_reply.bin", buf, len);
  int family = -1, rem = len - NLMSG_LENGTH(GENL_HDRLEN);
  for (struct nlattr *a = (void *)((char *)NLMSG_DATA(h) + GENL_HDRLEN); rem > 0;
       rem -= NLA_ALIGN(a->nla_len), a = (void *)((char *)a + NLA_ALIGN(a->nla_len)))
    if (a->nla_type == CTRL_ATTR_FAMILY_ID) family = *(unsigned short *)((char *)a + NLA_HDRLEN);
  printf("family id %d\n", family);
  double c0 = thread_ns();
  for (int i = 0; i < n; i++) {
    if (ask(fd, family, TASKSTATS_CMD_GET, TASKSTATS_CMD_ATTR_TGID, &pid, 4, 2 + i) < 0) { perror("send"); return 1; }
    len = recv(fd, buf, sizeof buf, 0);
    if (h->nlmsg_type == NLMSG_ERROR) {
      printf("TGID request: error %d\n", ((struct nlmsgerr *)NLMSG_DATA(h))->error);
      if (dir) save(dir, "tgid_reply_eperm.bin", buf, len);
      return 1;
    }
    if (i == 0 && dir) {
      struct taskstats *t = stats_of(buf);
      save(dir, "tgid_reply_a.bin", buf, len);
      char e[256];
      int m = snprintf(e, sizeof e, "(%llu, %llu, %llu, %llu)\n", (unsigned long long)t->cpu_count,
                       (unsigned long long)t->cpu_run_virtual_total, (unsigned long long)t->nvcsw,
                       (unsigned long long)t->nivcsw);
      save(dir, "tgid_reply_a.expect", e, m);
    }
  }
  double per = (thread_ns() - c0) / n / 1000;
  struct taskstats *t = stats_of(buf);
  printf("answer %d bytes, version %d: cpu_count %llu cpu_delay_total %llu cpu_run_virtual_total %llu nvcsw %llu nivcsw %llu\n",
         len, t->version, (unsigned long long)t->cpu_count, (unsigned long long)t->cpu_delay_total,
         (unsigned long long)t->cpu_run_virtual_total, (unsigned long long)t->nvcsw, (unsigned long long)t->nivcsw);
  printf("%d requests: %.2f us of thread CPU each\n", n, per);
  if (dir) {
    usleep(sleep_ms * 1000);
    ask(fd, family, TASKSTATS_CMD_GET, TASKSTATS_CMD_ATTR_TGID, &pid, 4, 1000000);
    len = recv(fd, buf, sizeof buf, 0);
    save(dir, "tgid_reply_b.bin", buf, len);
    t = stats_of(buf);
    printf("after %d ms: cpu_count %llu\n", sleep_ms, (unsigned long long)t->cpu_count);
  }
  return 0;
}
