// exceptions.cpp -- pitfall 3: C++ exceptions across frames.
//
// The unwinder finds the frame of every return address through .eh_frame
// (FDE address ranges, looked up via the .eh_frame_hdr binary-search table)
// and the landing pads through the LSDA in .gcc_except_table (call-site
// ranges relative to the function start).  A rewriter that moves procedures
// must rewrite all of that: if an FDE still describes the old address range,
// the unwinder finds no frame for the new return address and calls
// std::terminate (abort); if the LSDA is stale, the wrong landing pad runs,
// destructors are skipped, or the catch clause is not found.
//
// Covered: throw through several frames in different functions, through
// frames that only have cleanups (destructors), rethrow with `throw;`,
// catch by base class and by std::exception, custom std::exception
// subclasses, an exception escaping a constructor (already-built members and
// bases are destroyed), a function-try-block, std::exception_ptr, nested
// exceptions, virtual calls and dynamic_cast on the caught object.
#include <cstdio>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#define NOINLINE __attribute__((noinline))

static int live_objects;

struct Tracer {
    const char *name;
    explicit Tracer(const char *n) : name(n) { live_objects++; std::printf("    ctor %s\n", name); }
    ~Tracer() { live_objects--; std::printf("    dtor %s\n", name); }
};

struct AppError : std::runtime_error {
    int code;
    AppError(const std::string &w, int c) : std::runtime_error(w), code(c) {}
    virtual const char *kind() const { return "AppError"; }
};
struct IoError : AppError {
    IoError(const std::string &w, int c) : AppError(w, c) {}
    const char *kind() const override { return "IoError"; }
};
struct ParseError : AppError {
    int line;
    ParseError(const std::string &w, int l) : AppError(w, 65), line(l) {}
    const char *kind() const override { return "ParseError"; }
};

NOINLINE void level4(int what)
{
    Tracer t("level4");
    switch (what) {
    case 0: throw IoError("disk on fire", 5);
    case 1: throw ParseError("unexpected token", 42);
    case 2: throw std::out_of_range("index 7 out of range");
    case 3: throw 17;
    default: break;
    }
    std::printf("    level4 returned normally\n");
}

NOINLINE void level3(int what)
{
    Tracer t("level3");
    std::vector<std::string> junk{ "a", "b", "c" }; // more cleanups
    level4(what);
    std::printf("    level3 after call (%zu)\n", junk.size());
}

NOINLINE void level2(int what)
{
    try {
        level3(what);
    } catch (const ParseError &e) {
        std::printf("    level2 saw ParseError line %d, rethrowing\n", e.line);
        throw; // rethrow the same object
    }
}

NOINLINE int level1(int what)
{
    Tracer t("level1");
    level2(what);
    return 1;
}

NOINLINE void run(int what)
{
    std::printf("run(%d):\n", what);
    try {
        level1(what);
        std::printf("  no exception\n");
    } catch (const AppError &e) { // catch by base class
        std::printf("  caught %s: %s code=%d\n", e.kind(), e.what(), e.code);
        if (auto *p = dynamic_cast<const ParseError *>(&e))
            std::printf("  dynamic_cast to ParseError ok, line %d\n", p->line);
    } catch (const std::exception &e) {
        std::printf("  caught std::exception: %s\n", e.what());
    } catch (...) {
        std::printf("  caught something else\n");
    }
    std::printf("  live objects: %d\n", live_objects);
}

// Exception escaping a constructor: base and members already constructed
// must be destroyed, the object itself must not be.
struct Base {
    Tracer tb{ "Widget::Base" };
};
struct Widget : Base {
    Tracer m1{ "Widget::m1" };
    std::unique_ptr<Tracer> m2;
    Tracer m3{ "Widget::m3" };
    explicit Widget(bool fail) : m2(new Tracer("Widget::m2(heap)"))
    {
        if (fail)
            throw std::invalid_argument("Widget refused");
        std::printf("    Widget built\n");
    }
    ~Widget() { std::printf("    ~Widget\n"); }
};

NOINLINE void make_widget(bool fail)
{
    std::printf("make_widget(%s):\n", fail ? "fail" : "ok");
    try {
        Widget w(fail);
    } catch (const std::invalid_argument &e) {
        std::printf("  caught: %s\n", e.what());
    }
    std::printf("  live objects: %d\n", live_objects);
}

// Function-try-block on a constructor: the handler runs and the exception is
// rethrown automatically.
struct Holder {
    Tracer t;
    NOINLINE Holder() try : t("Holder::t") {
        throw std::length_error("Holder body failed");
    } catch (const std::exception &e) {
        std::printf("    function-try-block saw: %s\n", e.what());
    }
};

NOINLINE std::exception_ptr capture(int i)
{
    try {
        if (i % 2)
            throw std::runtime_error("odd " + std::to_string(i));
        throw AppError("even " + std::to_string(i), i);
    } catch (...) {
        return std::current_exception();
    }
}

NOINLINE void nested()
{
    try {
        try {
            throw IoError("inner", 3);
        } catch (...) {
            std::throw_with_nested(std::runtime_error("outer"));
        }
    } catch (const std::exception &e) {
        std::printf("nested: %s\n", e.what());
        try {
            std::rethrow_if_nested(e);
        } catch (const AppError &inner) {
            std::printf("  inner: %s (%s)\n", inner.what(), inner.kind());
        }
    }
}

// A noreturn thrower called as the last instruction of its caller.
[[noreturn]] NOINLINE void raise_app(int code) { throw AppError("raised by noreturn", code); }
NOINLINE int checked_double(int v)
{
    if (v >= 0)
        return v * 2;
    raise_app(-v);
}

// Exceptions thrown through an indirect call.
NOINLINE int through_pointer(void (*fn)(int), int arg)
{
    try {
        fn(arg);
    } catch (int v) {
        return v;
    }
    return -1;
}

int main()
{
    for (int i = 0; i <= 4; i++)
        run(i);
    make_widget(false);
    make_widget(true);
    std::printf("Holder:\n");
    try {
        Holder h;
    } catch (const std::length_error &e) {
        std::printf("  caught after function-try-block: %s\n", e.what());
    }
    for (int i = 0; i < 3; i++) {
        try {
            std::rethrow_exception(capture(i));
        } catch (const AppError &e) {
            std::printf("exception_ptr %d: AppError %s\n", i, e.what());
        } catch (const std::exception &e) {
            std::printf("exception_ptr %d: %s\n", i, e.what());
        }
    }
    nested();
    for (int v : { 4, -9 }) {
        try {
            std::printf("checked_double(%d) = %d\n", v, checked_double(v));
        } catch (const AppError &e) {
            std::printf("checked_double(%d) threw: %s code=%d\n", v, e.what(), e.code);
        }
    }
    std::printf("through pointer: %d\n", through_pointer(level4, 3));
    std::printf("final live objects: %d\n", live_objects);
    return live_objects == 0 ? 7 : 1;
}
