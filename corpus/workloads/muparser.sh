#!/usr/bin/env bash
# muparser workload (C++): the library's self test (hundreds of expressions,
# many of which throw mu::ParserError that the tester catches), then a long
# fixed-seed stream of valid and invalid expressions into the interactive
# calculator: every invalid one throws mu::ParserError out of the parser's
# virtual methods into example1's catch handler. Ends with throw(1), whose
# std::runtime_error unwinds out of the calculator loop to main's
# catch (std::exception&).
# Never use an undefined identifier: the sample's variable factory prints a
# pointer for those.
# Usage: muparser.sh BINARY   (cwd: an empty scratch directory)
. "$(dirname "$0")/_common.sh"
B=$1

awk -v seed=99 -v n=30000 '
  function rnd(k) { x = (x * 16807) % 2147483647; return x % k }
  function num() { r = rnd(10); if (r < 6) return rnd(100); if (r < 9) return sprintf("%d.%d", rnd(1000), rnd(100)); return sprintf("1e%d", rnd(5)) }
  BEGIN {
    x = seed
    ok[0]  = "a*%s+b/%s";            ok[1]  = "sin(%s)*cos(b)+sqrt(%s)"
    ok[2]  = "min(%s,a,b,%s)";       ok[3]  = "max(%s,-a,%s)*2"
    ok[4]  = "sum(1,%s,3,%s,5)";     ok[5]  = "avg(a,%s,b,%s)"
    ok[6]  = "a>%s ? %s : b";        ok[7]  = "(%s<b) && (a!=%s) || 0"
    ok[8]  = "%sM+%sm";              ok[9]  = "!%s + !(a-%s)"
    ok[10] = "%s add %s mul 3";      ok[11] = "_pi*%s^2-_e/%s"
    ok[12] = "a=%s, b=a*2+%s, a+b";  ok[13] = "ln(%s+1)+log10(%s+1)+log2(8)"
    ok[14] = "exp(-%s/100)+abs(-%s)"; ok[15] = "sign(a-%s)*rint(%s)"
    ok[16] = "strfun2(\"text\",%s,%s)"; ok[17] = "arg1of2(%s,%s)+arg2of2(1,2)"
    ok[18] = "(((%s)))-(-(-%s))";    ok[19] = "0x1F+%s-0b101*%s"
    ok[20] = "a=b=%s, ft=%s, a*ft"; ok[21] = "tan(%s)+asin(0.5)+acos(0.5)+atan(%s)"
    ok[22] = "sinh(1)+cosh(%s/100)+tanh(%s)"; ok[23] = "a<%s ? b<%s ? 1 : 2 : 3"
    nok = 24
    bad[0] = "%s+";        bad[1] = "(%s";        bad[2] = "%s)"
    bad[3] = "sin()";      bad[4] = "min()";      bad[5] = "a="
    bad[6] = "%s %s";      bad[7] = "sVar1+%s";   bad[8] = "strfun0(%s)"
    bad[9] = "%s?%s";      bad[10] = "sin(%s,%s)"; bad[11] = "a+*%s"
    bad[12] = "\"abc\"";   bad[13] = "%s!=";      bad[14] = "3=%s"
    bad[15] = "sum()";     bad[16] = "((%s)";     bad[17] = "%s,,%s"
    bad[18] = "strfun2(%s,1,2)"; bad[19] = "_pi=%s"; bad[20] = "%s : %s"
    bad[21] = "a=%s=%s";   bad[22] = "arg1of2(%s)"
    nbad = 23
    for (i = 0; i < n; i++) {
      r = rnd(100)
      if (r < 60)      printf ok[rnd(nok)] "\n", num(), num()
      else if (r < 97) printf bad[rnd(nbad)] "\n", num(), num()
      else if (r < 98) print "opt off"
      else if (r < 99) print "opt on"
      else             print "ping()+rnd(1)*0"
      if (i % 5000 == 2500) {
        print "locale de"; print "1,5+2,25"; print "min(1;2;3)"; print "2,5*2"; print "locale en"
        print "test bulk"; print "list const"; print "selftest()"; print "dbg"
      }
    }
    print "strfun0(\"last\")"
    print "throw(1)"
    print "1+1"
  }' >input.txt

run "calculator" "$B" <input.txt >output.txt
# a second session that ends with "quit"
printf '%s\n' 'help()' 'a=2, b=3, a*b' 'quit' 'never evaluated' >quit.txt
run "quit" "$B" <quit.txt
