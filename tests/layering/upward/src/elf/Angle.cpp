// The same upward include in angle brackets: it must be rejected too.
#include <rewrite/Rewriter.h>
