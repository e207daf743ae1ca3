// The sampler's tick in situ: at 100 Hz for SECONDS, the thread CPU per tick of the wake-up
// alone, + one /proc/loadavg read, + every thread's schedstat, + every thread's stat (3 rounds).
// Build and run: gcc -O2 -o proc_tick docs/bench/proc_tick.c && ./proc_tick PID 3
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <time.h>
#include <stdint.h>
static uint64_t tcpu(void){struct timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec*1000000000ull+t.tv_nsec;}
int tids[512]; int nt; int fst[512], fss[512];
int main(int argc,char**argv){
  const char*pid=argv[1]; double secs=atof(argv[2]);
  char p[128]; snprintf(p,sizeof p,"/proc/%s/task",pid);
  DIR*d=opendir(p); struct dirent*e; while((e=readdir(d))){int t=atoi(e->d_name); if(t>0) tids[nt++]=t;} closedir(d);
  for(int i=0;i<nt;i++){snprintf(p,sizeof p,"/proc/%s/task/%d/stat",pid,tids[i]);fst[i]=open(p,O_RDONLY);snprintf(p,sizeof p,"/proc/%s/task/%d/schedstat",pid,tids[i]);fss[i]=open(p,O_RDONLY);}
  int la=open("/proc/loadavg",O_RDONLY);
  const char* modes[]={"wake","wake+loadavg","wake+schedstat_all","wake+stat_all"};
  char buf[512];
  printf("threads %d\n",nt);
  for(int r=0;r<3;r++) for(int m=0;m<4;m++){
    int n=(int)(secs*100); struct timespec next; clock_gettime(CLOCK_MONOTONIC,&next);
    long ones=0;
    uint64_t t0=tcpu();
    for(int i=0;i<n;i++){
      next.tv_nsec+=10000000; if(next.tv_nsec>=1000000000){next.tv_nsec-=1000000000;next.tv_sec++;}
      clock_nanosleep(CLOCK_MONOTONIC,TIMER_ABSTIME,&next,0);
      if(m==1){int k=pread(la,buf,128,0); buf[k]=0; char*s=strchr(buf,'/'); while(s>buf&&s[-1]!=' ')s--; if(atoi(s)<=1) ones++;}
      if(m==2) for(int j=0;j<nt;j++) pread(fss[j],buf,128,0);
      if(m==3) for(int j=0;j<nt;j++) pread(fst[j],buf,512,0);
    }
    double us=(double)(tcpu()-t0)/n/1000;
    printf("%d %-20s %.1f us/tick = %.2f%% of a core%s", r, modes[m], us, us/100, m==1?"":"\n");
    if(m==1) printf("  (nr_running<=1 in %.0f%% of ticks)\n", 100.0*ones/n);
  }
}
