// Chat templates an attacker could put in a GGUF file: each asks for gigabytes, 10^10 steps or
// unbounded nesting in a line. The budgets must stop every one within a second with an error
// naming the budget (used by the interpreter, `minfer template` and server tests).
#pragma once

#include <string>
#include <vector>

namespace minfer::chat::test {

struct HostileTemplate {
  const char* source;
  const char* error;  // a substring of the error
};

inline const std::vector<HostileTemplate>& hostile_templates() {
  static const std::vector<HostileTemplate> kTemplates = {
      {"{{ 'a' * 100000000000 }}", "string of 100000000000 bytes exceeds the 16 MiB size budget"},
      {"{{ messages[0].content * 1000000000 }}", "budget"},
      {"{{ range(100000)|join(',') * 100000 }}", "budget"},
      {"{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
       "{% endfor %}",
       "budget"},
      {"{% set ns = namespace(l=[1,2]) %}{% for i in range(40) %}{% set ns.l = ns.l + ns.l %}"
       "{% endfor %}",
       "budget"},
      {"{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
       "budget"},
      {"{% macro g(n) %}{% if n > 0 %}{{ g(n-1) }}{{ g(n-1) }}{% endif %}{% endmacro %}"
       "{{ g(60) }}",
       "budget"},
      {"{{ 'x'|center(10000000000) }}", "budget"},
      {"{{ [0] * 10000000000 }}", "budget"},
      // Found by the fuzzer: repeating an empty sequence used to loop `n` times.
      {"{{ ([] * 1000000000000000000) ~ ('' * 1000000000000000000) }}{{ 'x' * 100000000000 }}",
       "budget"},
      {"{{ messages * 100000000 }}", "budget"},
      {"{{ 'x\\nx'|indent(10000000000) }}", "budget"},
      {"{{ 'x\\nx'|indent(1000000, true) * 100 }}", "budget"},
      {"{{ ('a' * 1000000)|replace('a', 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb') }}", "budget"},
      {"{{ ('a' * 1000000).replace('a', 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb') }}", "budget"},
      {"{{ ('{0}' * 1000000).format('aaaaaaaaaaaaaaaaaaaaaaaa') }}", "budget"},
      {"{{ ('%s' * 200000) % (('a' * 100,) * 200000) }}", "budget"},
      {"{{ '%s%s'|format('a' * 10000000, 'b' * 10000000) }}", "budget"},
      {"{{ '%10000000000s'|format('a') }}", "budget"},
      {"{{ ('aaaaaaaaaaaaaaaaaaaaaaaaaa,' * 100000).split(',') * 100 }}", "budget"},
      {"{{ ('a\\n' * 5000000).splitlines() }}", "budget"},
      {"{{ ('a ' * 5000000).split() }}", "budget"},
      {"{{ ('a' * 10000000)|list }}", "budget"},
      {"{{ ('<' * 10000000)|e }}", "budget"},
      {"{{ ('x' * 1000000).join(['a'] * 100) }}", "budget"},
      {"{{ (['x' * 1000000] * 100)|join }}", "budget"},
      {"{{ ['x' * 1000000] * 100 }}", "budget"},
      {"{{ (['x' * 1000000] * 100)|tojson }}", "budget"},
      {"{{ ['x' * 1000000] * 100 ~ '' }}", "budget"},
      {"{{ (['x' * 1000000] * 100)|string }}", "budget"},
      {"{{ [[0] * 1000] * 100000 }}", "budget"},
      {"{{ [1]|batch(10000000000, 0) }}", "budget"},
      {"{{ {'a': [1]}|tojson(indent=10000000000) }}", "budget"},
      {"{{ {'a': [[[[[1]]]]]}|tojson(indent=10000000) }}", "budget"},
      {"{% set l = [0] * 200000 %}{% for i in range(100000) %}{% if l == l %}{% endif %}"
       "{% endfor %}",
       "budget"},
      {"{% set l = range(100000)|list %}{{ (l + l)|unique|list|length }}", "budget"},
      {"{% set s = 'a' * 16000000 %}{% for i in range(100000) %}{{ s.count('b') }}{% endfor %}",
       "budget"},
      {"{% set s = 'a' * 16000000 %}{% for i in range(100000) %}{% if 'b' in s %}{% endif %}"
       "{% endfor %}",
       "budget"},
      {"{% set s = 'a' * 16000000 %}{% for i in range(100000) %}{% set x = s[5] %}{% endfor %}",
       "budget"},
      {"{% set s = 'a' * 16000000 %}{% for i in range(100000) %}{% set x = s|upper %}"
       "{% endfor %}",
       "budget"},
      {"{% set s = 'a' * 16000000 %}{% for i in range(100000) %}{% set x = s[1:] %}"
       "{% endfor %}",
       "budget"},
      {"{% set l = ['a' * 1000000] * 200 %}{{ l|map('upper')|list|length }}", "budget"},
      {"{% set s = 'x' * 1000 %}{% for i in range(100000) %}{{ s }}{% endfor %}", "output budget"},
      {"{% set s = 'x' * 1000 %}{% macro m() %}{% for i in range(100000) %}{{ s }}{% endfor %}"
       "{% endmacro %}{% set x = m() %}",
       "output budget"},
      {"{% set ns = namespace(s='') %}{% for i in range(100000) %}"
       "{% set ns.s = ns.s ~ 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' %}{% endfor %}",
       "budget"},
      {"{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = ns.l + [i] %}"
       "{% endfor %}",
       "budget"},
      {"{% set ns = namespace(l=1) %}{% for i in range(100000) %}{% set ns.l = [ns.l] %}"
       "{% endfor %}{{ ns.l }}",
       "nesting limit"},
      {"{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}", "namespace nested in itself"},
      // A macro recursing through a deep expression: each nesting within its own limit, the
      // two together past the stack were it not for the depth budget.
      {"{% macro m(n) %}{{ [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[ m(n - 1) if n > 0 else 0 "
       "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]] }}{% endmacro %}{{ m(240) }}",
       "deeper than the depth budget of 1024"},
      {"{% set d = dict(range(100000)|map('string')|batch(2)) %}{% for i in range(100000) %}"
       "{{ d['x'] }}{% endfor %}",
       "budget"},
  };
  return kTemplates;
}

// `piece` n times.
inline std::string repeated(const std::string& piece, size_t n) {
  std::string out;
  out.reserve(piece.size() * n);
  for (size_t i = 0; i < n; ++i) out += piece;
  return out;
}

// Templates whose parse alone would recurse (or build a tree) hundreds of thousands of levels
// deep: refused when the file is loaded, naming the nesting limit and the line. The first is the
// issue's: 1,040,000 `not`s, 4.16 MB, under the 4 MiB cap of a GGUF template.
struct DeepTemplate {
  std::string source;
  int line;  // where the error points
};

inline const std::vector<DeepTemplate>& deep_templates() {
  static const std::vector<DeepTemplate> kTemplates = {
      {"{{ " + repeated("not ", 1040000) + "true }}", 1},
      {"line 1\n{{ " + repeated("(", 100000) + "1" + repeated(")", 100000) + " }}", 2},
      {"{{ 1" + repeated(" + 1", 200000) + " }}", 1},
      {"{{ 'a'" + repeated(" ~ 'a'", 200000) + " }}", 1},
      {"{{ x" + repeated(".a", 200000) + " }}", 1},
      {"{{ x" + repeated("[0]", 200000) + " }}", 1},
      {"{{ x" + repeated("()", 200000) + " }}", 1},
      {"{{ 'a'" + repeated("|e", 200000) + " }}", 1},
      {"{{ 1" + repeated(" is number", 1) + repeated(" and 1", 200000) + " }}", 1},
      {"{{ " + repeated("-", 200000) + "1 }}", 1},
      {"{{ " + repeated("[", 100000) + repeated("]", 100000) + " }}", 1},
      {"{{ " + repeated("{'a': ", 100000) + "1" + repeated("}", 100000) + " }}", 1},
      {"{{ " + repeated("1 if 1 else ", 200000) + "1 }}", 1},
      {repeated("{% if true %}", 100000) + repeated("{% endif %}", 100000), 1},
      {repeated("{% for x in [1] %}", 100000) + repeated("{% endfor %}", 100000), 1},
      {repeated("{% macro m() %}", 100000) + repeated("{% endmacro %}", 100000), 1},
  };
  return kTemplates;
}

}  // namespace minfer::chat::test
