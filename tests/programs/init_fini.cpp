// init_fini.cpp -- pitfall 15: code that runs before and after main.
//
// .preinit_array, .init_array and .fini_array are arrays of code pointers
// (R_X86_64_RELATIVE in PIE, R_X86_64_64 otherwise) that ld.so and libc
// call with no reference from any instruction; constructor priorities
// decide their order; C++ static objects register their destructors with
// __cxa_atexit (a code pointer passed at run time); atexit/on_exit handlers
// are pointers kept by libc until exit; a function-local static is
// initialised through __cxa_guard on first use.  A rewriter that only fixes
// references from code, or rewrites the arrays but not their relocation
// entries in the ELF, leaves pointers into the poisoned original code --
// the crash happens before main or after main returns.
// All output goes through write(2) so that its order is exactly the order
// of execution, independent of stdio buffering at exit.
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cstdio>

static void say(const char *s)
{
    ssize_t r = write(1, s, strlen(s));
    (void)r;
}

static int sequence; // counts events; checked in main and at exit
static void event(const char *what)
{
    char buf[128];
    std::snprintf(buf, sizeof buf, "%2d %s\n", ++sequence, what);
    say(buf);
}

// --- explicit array entries (the .NNNNN suffix gives them priority 500, so
// their order relative to the compiler-generated entries is fixed) ---
static void preinit_fn(int, char **, char **) { event("preinit_array entry"); }
static void init_array_fn() { event("init_array entry (explicit, priority 500)"); }
static void fini_array_fn() { event("fini_array entry (explicit, priority 500)"); }
__attribute__((section(".preinit_array"), used)) static void (*preinit_ptr)(int, char **, char **) =
    preinit_fn;
__attribute__((section(".init_array.00500"), used)) static void (*init_ptr)() = init_array_fn;
__attribute__((section(".fini_array.00500"), used)) static void (*fini_ptr)() = fini_array_fn;

// --- constructor / destructor attributes with priorities ---
__attribute__((constructor(101))) static void ctor_101() { event("constructor(101)"); }
__attribute__((constructor(202))) static void ctor_202() { event("constructor(202)"); }
__attribute__((constructor)) static void ctor_plain() { event("constructor (no priority)"); }
__attribute__((destructor(101))) static void dtor_101() { event("destructor(101)"); }
__attribute__((destructor(202))) static void dtor_202() { event("destructor(202)"); }
__attribute__((destructor)) static void dtor_plain() { event("destructor (no priority)"); }

// --- C++ static objects ---
struct Noisy {
    const char *name;
    explicit Noisy(const char *n) : name(n)
    {
        char b[96];
        std::snprintf(b, sizeof b, "Noisy(%s) constructed", name);
        event(b);
    }
    ~Noisy()
    {
        char b[96];
        std::snprintf(b, sizeof b, "~Noisy(%s)", name);
        event(b);
    }
};
static Noisy global_a("global_a");
static Noisy global_b("global_b");
__attribute__((init_priority(150))) static Noisy early("init_priority(150)");

static Noisy &lazy()
{
    static Noisy instance("function-local static");
    return instance;
}

// --- atexit / on_exit ---
static void atexit_1() { event("atexit handler 1"); }
static void atexit_2() { event("atexit handler 2 (registered in a constructor)"); }
static void atexit_3() { event("atexit handler 3 (registered in main)"); }
static void on_exit_fn(int status, void *arg)
{
    char b[96];
    std::snprintf(b, sizeof b, "on_exit handler: status %d, arg %s", status, (const char *)arg);
    event(b);
}

__attribute__((constructor(300))) static void register_from_ctor()
{
    event("constructor(300) registers atexit handlers");
    atexit(atexit_1);
    atexit(atexit_2);
}

int main()
{
    event("main starts");
    lazy();
    lazy(); // second call: no construction
    atexit(atexit_3);
    on_exit(on_exit_fn, (void *)"cookie");
    event("main returns 5");
    return 5;
}
