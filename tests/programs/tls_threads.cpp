// tls_threads.cpp -- pitfalls 6 and 7: thread-local storage and threads.
//
// Why it breaks a careless rewriter:
//  - __thread / thread_local variables are reached through %fs with
//    TPOFF relocations (local-exec in an executable); the offsets must stay
//    consistent with the PT_TLS segment (.tdata/.tbss) of the output;
//  - thread_local objects with constructors are initialised lazily through
//    the compiler-generated TLS init function (_ZTH*, __tls_init) and their
//    destructors are registered with __cxa_thread_atexit: code pointers that
//    the runtime calls at thread exit, after the rewritten code has long
//    returned;
//  - thread entry points are function pointers handed to pthread_create /
//    libstdc++ (std::thread calls back through a vtable in the executable),
//    pthread_once gets a callback, and every thread runs the moved code
//    concurrently.
// Output is independent of scheduling: each thread writes its results into
// its own slot and main prints everything after join.
#include <pthread.h>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#define NOINLINE __attribute__((noinline))

enum { NTHREADS = 4 };

__thread int tls_counter = 100;          // .tdata (initialised)
__thread char tls_name[32];              // .tbss (zeroed)
static __thread unsigned long tls_hash;  // .tbss, internal linkage

struct Result {
    unsigned long hash;
    int counter;
    int primes;
    char name[80];
    int ctor_seen;
    int dtor_seen;
} results[NTHREADS + 1];

static std::atomic<int> ctor_calls{ 0 };

struct PerThread {
    int id = -1;
    std::vector<int> history;
    PerThread() { ctor_calls++; history.push_back(-1); }
    ~PerThread()
    {
        // runs at thread exit, called by the runtime through a pointer
        if (id >= 0 && id <= NTHREADS)
            results[id].dtor_seen = (int)history.size();
    }
};
thread_local PerThread per_thread;        // dynamic init + destructor
thread_local std::string tl_label = "unset";

static NOINLINE void bump(int by)
{
    tls_counter += by;
    tls_hash = tls_hash * 1000003u + (unsigned long)by;
    per_thread.history.push_back(by);
}

static NOINLINE int count_primes(int lo, int hi)
{
    int n = 0;
    for (int i = lo; i < hi; i++) {
        if (i < 2)
            continue;
        bool prime = true;
        for (int d = 2; d * d <= i; d++)
            if (i % d == 0) {
                prime = false;
                break;
            }
        n += prime;
    }
    return n;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int once_runs;
static void once_init() { once_runs++; }

static std::mutex mtx;
static long shared_total;

static NOINLINE void work(int id)
{
    pthread_once(&once, once_init);
    per_thread.id = id;
    tl_label = "worker-" + std::to_string(id);
    std::snprintf(tls_name, sizeof tls_name, "t%d", id);
    for (int i = 1; i <= 50 + id; i++)
        bump(i * (id + 1));
    int primes = count_primes(id * 20000, (id + 1) * 20000);
    {
        std::lock_guard<std::mutex> g(mtx);
        shared_total += primes;
    }
    Result &r = results[id];
    r.hash = tls_hash;
    r.counter = tls_counter;
    r.primes = primes;
    std::snprintf(r.name, sizeof r.name, "%s/%s", tls_name, tl_label.c_str());
    r.ctor_seen = per_thread.history.size() > 0 && per_thread.history[0] == -1;
}

static void *pthread_entry(void *arg)
{
    work((int)(long)arg);
    return arg;
}

int main()
{
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    std::printf("main before: counter=%d name='%s' label=%s\n", tls_counter, tls_name,
                tl_label.c_str());

    pthread_t pt[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&pt[i], nullptr, pthread_entry, (void *)i);
    std::vector<std::thread> st;
    for (int i = 2; i < NTHREADS; i++)
        st.emplace_back(work, i);
    for (int i = 0; i < 2; i++) {
        void *ret;
        pthread_join(pt[i], &ret);
        if ((long)ret != i)
            std::printf("bad return value from thread %d\n", i);
    }
    for (auto &t : st)
        t.join();

    // the main thread has its own copies, untouched by the workers
    std::printf("main after workers: counter=%d name='%s' label=%s hash=%lu\n", tls_counter,
                tls_name, tl_label.c_str(), tls_hash);
    work(NTHREADS);

    for (int i = 0; i <= NTHREADS; i++) {
        const Result &r = results[i];
        std::printf("thread %d: %s counter=%d hash=%lu primes=%d ctor=%d dtor_history=%d\n", i,
                    r.name, r.counter, r.hash, r.primes, r.ctor_seen, r.dtor_seen);
    }
    std::printf("total primes %ld, pthread_once ran %d time(s), thread_local ctors %d\n",
                shared_total, once_runs, ctor_calls.load());
    return 6;
}
