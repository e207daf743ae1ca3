/* What one 100 Hz sample costs in situ (once per 10 ms tick, caches cold from the sleep), per
 * way of asking: nothing (the wake-up alone), every thread's schedstat, every thread's stat, or
 * one taskstats TGID request for the whole process. Thread CPU clock per tick, 4 rounds
 * interleaved. Build: gcc -O2 -o /tmp/proc_tick_taskstats docs/bench/proc_tick_taskstats.c
 * Usage: proc_tick_taskstats PID [SECONDS]  (root: the taskstats request needs CAP_NET_ADMIN) */
#include <dirent.h>
#include <fcntl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/taskstats.h>
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

/* The taskstats family id (0 when it does not resolve). */
static int family(int fd) {
  struct req r;
  memset(&r, 0, sizeof r);
  r.n.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN) + NLA_ALIGN(NLA_HDRLEN + 10);
  r.n.nlmsg_type = GENL_ID_CTRL;
  r.n.nlmsg_flags = NLM_F_REQUEST;
  r.g.cmd = CTRL_CMD_GETFAMILY;
  r.g.version = 1;
  struct nlattr *a = (void *)r.attr;
  a->nla_type = CTRL_ATTR_FAMILY_NAME;
  a->nla_len = NLA_HDRLEN + 10;
  memcpy((char *)a + NLA_HDRLEN, "TASKSTATS", 10);
  send(fd, &r, r.n.nlmsg_len, 0);
  char buf[1024];
  int len = recv(fd, buf, sizeof buf, 0), rem = len - NLMSG_LENGTH(GENL_HDRLEN);
  struct nlmsghdr *h = (void *)buf;
  if (h->nlmsg_type == NLMSG_ERROR) return 0;
  for (a = (void *)((char *)NLMSG_DATA(h) + GENL_HDRLEN); rem > 0;
       rem -= NLA_ALIGN(a->nla_len), a = (void *)((char *)a + NLA_ALIGN(a->nla_len)))
    if (a->nla_type == CTRL_ATTR_FAMILY_ID) return *(unsigned short *)((char *)a + NLA_HDRLEN);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: proc_tick_taskstats PID [SECONDS]\n"); return 2; }
  int pid = atoi(argv[1]), secs = argc > 2 ? atoi(argv[2]) : 2;
  char p[256];
  snprintf(p, sizeof p, "/proc/%d/task", pid);
  DIR *d = opendir(p);
  if (!d) { perror(p); return 1; }
  static int tids[4096];
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) && n < 4096;)
    if (e->d_name[0] >= '0' && e->d_name[0] <= '9') tids[n++] = atoi(e->d_name);
  int nl = socket(AF_NETLINK, SOCK_RAW, NETLINK_GENERIC);
  struct sockaddr_nl k = {.nl_family = AF_NETLINK};
  connect(nl, (void *)&k, sizeof k);
  struct req r;
  memset(&r, 0, sizeof r);
  r.n.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN) + 8;
  r.n.nlmsg_type = family(nl);
  r.n.nlmsg_flags = NLM_F_REQUEST;
  r.g.cmd = TASKSTATS_CMD_GET;
  r.g.version = 1;
  struct nlattr *a = (void *)r.attr;
  a->nla_type = TASKSTATS_CMD_ATTR_TGID;
  a->nla_len = 8;
  memcpy((char *)a + NLA_HDRLEN, &pid, 4);
  const char *names[] = {"wake-up only", "every schedstat", "every stat", "one taskstats"};
  printf("pid %d, %d threads, taskstats family %d, %d s per way\n", pid, n, r.n.nlmsg_type, secs);
  static int fds[4096];
  for (int round = 0; round < 4; round++)
    for (int way = 0; way < 4; way++) {
      for (int i = 0; i < n; i++) {
        snprintf(p, sizeof p, "/proc/%d/task/%d/%s", pid, tids[i], way == 2 ? "stat" : "schedstat");
        fds[i] = open(p, O_RDONLY);
      }
      char buf[2048];
      struct timespec next;
      clock_gettime(CLOCK_MONOTONIC, &next);
      int ticks = secs * 100;
      double c0 = thread_ns();
      for (int s = 0; s < ticks; s++) {
        next.tv_nsec += 10000000;
        if (next.tv_nsec >= 1000000000) { next.tv_nsec -= 1000000000; next.tv_sec++; }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
        if (way == 1 || way == 2)
          for (int i = 0; i < n; i++) pread(fds[i], buf, sizeof buf, 0);
        if (way == 3 && r.n.nlmsg_type) {
          r.n.nlmsg_seq++;
          send(nl, &r, r.n.nlmsg_len, 0);
          recv(nl, buf, sizeof buf, MSG_DONTWAIT);
        }
      }
      printf("round %d %-16s %6.1f us per tick\n", round, names[way], (thread_ns() - c0) / ticks / 1000);
      for (int i = 0; i < n; i++) close(fds[i]);
    }
  return 0;
}
