// Per-read CPU cost of /proc files of one process's threads (hot: files kept open, re-read
// 2000 times with pread at offset 0; cold: open/read/close), an empty syscall, and the CPU a
// 10 ms wake-up costs (nanosleep, clock_nanosleep absolute, timerfd). Thread CPU clock.
// Build and run: gcc -O2 -o proc_reads docs/bench/proc_reads.c && PID=$(pidof mariadbd) ./proc_reads
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <time.h>
#include <sys/timerfd.h>
#include <stdint.h>
static uint64_t tcpu(void){struct timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec*1000000000ull+t.tv_nsec;}
int tids[512]; int nt;
int fds[512];
double bench(const char*file,int bufsz,int iters){
  char p[256]; char buf[4096];
  for(int i=0;i<nt;i++){snprintf(p,sizeof p,"/proc/%s/task/%d/%s",getenv("PID"),tids[i],file);fds[i]=open(p,O_RDONLY);}
  uint64_t t0=tcpu();
  for(int k=0;k<iters;k++) for(int i=0;i<nt;i++){ if(fds[i]>=0) pread(fds[i],buf,bufsz,0);}
  uint64_t t1=tcpu();
  for(int i=0;i<nt;i++) close(fds[i]);
  return (double)(t1-t0)/iters/nt;
}
double bench_cold(const char*file,int iters){
  char p[256]; char buf[4096];
  uint64_t t0=tcpu();
  for(int k=0;k<iters;k++) for(int i=0;i<nt;i++){snprintf(p,sizeof p,"/proc/%s/task/%d/%s",getenv("PID"),tids[i],file);int fd=open(p,O_RDONLY); read(fd,buf,sizeof buf); close(fd);}
  uint64_t t1=tcpu();
  return (double)(t1-t0)/iters/nt;
}
int main(int argc,char**argv){
  char p[64]; snprintf(p,sizeof p,"/proc/%s/task",getenv("PID"));
  DIR*d=opendir(p); struct dirent*e; while((e=readdir(d))){int t=atoi(e->d_name); if(t>0) tids[nt++]=t;} closedir(d);
  printf("threads %d\n",nt);
  int it=2000;
  for(int r=0;r<3;r++){
  printf("stat 512: %.0f ns/thread\n",bench("stat",512,it));
  printf("stat 64: %.0f ns/thread\n",bench("stat",64,it));
  printf("stat 16: %.0f ns/thread\n",bench("stat",16,it));
  printf("schedstat: %.0f ns/thread\n",bench("schedstat",512,it));
  printf("status 2048: %.0f ns/thread\n",bench("status",2048,it));
  printf("status 64: %.0f ns/thread\n",bench("status",64,it));
  printf("wchan: %.0f ns/thread\n",bench("wchan",64,it));
  printf("stat cold (open/read/close): %.0f ns/thread\n",bench_cold("stat",200));
  }
  // empty syscall
  uint64_t t0=tcpu(); for(int i=0;i<100000;i++) getppid(); printf("getppid: %.0f ns\n",(double)(tcpu()-t0)/100000);
  // wake-ups: nanosleep 10ms relative, clock_nanosleep abs, timerfd
  int n=200; struct timespec ts={0,10000000};
  t0=tcpu(); for(int i=0;i<n;i++) nanosleep(&ts,0); printf("nanosleep 10ms: %.0f ns/wake\n",(double)(tcpu()-t0)/n);
  struct timespec next; clock_gettime(CLOCK_MONOTONIC,&next);
  t0=tcpu(); for(int i=0;i<n;i++){ next.tv_nsec+=10000000; if(next.tv_nsec>=1000000000){next.tv_nsec-=1000000000;next.tv_sec++;} clock_nanosleep(CLOCK_MONOTONIC,TIMER_ABSTIME,&next,0);} printf("clock_nanosleep abs: %.0f ns/wake\n",(double)(tcpu()-t0)/n);
  int tf=timerfd_create(CLOCK_MONOTONIC,0); struct itimerspec its={{0,10000000},{0,10000000}}; timerfd_settime(tf,0,&its,0); uint64_t x;
  t0=tcpu(); for(int i=0;i<n;i++) read(tf,&x,8); printf("timerfd: %.0f ns/wake\n",(double)(tcpu()-t0)/n);
  return 0;
}
