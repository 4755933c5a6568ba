// Unit tests of the Jinja-subset interpreter: expressions, filters, tests, methods, whitespace
// control, loops, macros and errors. Each snippet has a hand-checked expected output (so the
// test means something without Python) and is also compared with Python Jinja2.
#include "chat_test_util.h"

namespace minfer::chat::test {
namespace {

struct Snippet {
  const char* name;
  const char* source;
  const char* vars;  // JSON object of template variables
  const char* expected;
};

// clang-format off
const Snippet kSnippets[] = {
  // Expressions and literals.
  {"arith", "{{ 1 + 2 * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 7 / 2 }} {{ 6 / 3 }}", "{}",
   "7 3 -4 1 2 1024 3.5 2.0"},
  {"float_repr", "{{ 0.1 + 0.2 }} {{ 1e20 }} {{ 1.5e-5 }} {{ 3.0 }} {{ 1/3 }} {{ 2.5 * 4 }} {{ 1e16 }} {{ 123456789.0 }}", "{}",
   "0.30000000000000004 1e+20 1.5e-05 3.0 0.3333333333333333 10.0 1e+16 123456789.0"},
  {"concat", "{{ 'a' ~ 1 ~ none ~ true ~ undefined_thing }}|{{ 'x' + 'y' }}|{{ [1] + [2, 3] }}", "{}",
   "a1NoneTrue|xy|[1, 2, 3]"},
  {"compare", "{{ 1 < 2 < 3 }} {{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' < 'b' }} {{ [1, 2] == [1, 2] }} {{ 'x' != 'y' }} {{ 3 >= 3 }}", "{}",
   "True True True True True True True"},
  {"in_not_in", "{{ 'ell' in 'hello' }} {{ 2 in [1, 2] }} {{ 'k' in d }} {{ 'z' not in d }} {{ 'q' in nothing }}", R"({"d": {"k": 1}})",
   "True True True True False"},
  {"logic", "{{ 0 or 'x' }}|{{ 1 and 'y' }}|{{ not [] }}|{{ none or [] }}|{{ '' and 1 }}", "{}",
   "x|y|True|[]|"},
  {"cond_expr", "{{ 'yes' if x else 'no' }}|{{ 'a' if not x }}|{{ 'b' if x }}", R"({"x": 1})",
   "yes||b"},
  {"string_escapes", R"({{ "tab\there" }}|{{ 'q\'s' }}|{{ "\u00e9\x41\\n" }}|{{ "a" "b" }})", "{}",
   "tab\there|q's|\xc3\xa9" "A\\n|ab"},
  {"repr_of_containers", "{{ [1, 'a', none, true, 1.5, [2], {'k': 'v'}] }}|{{ {'a': \"it's\"} }}|{{ (1,) }}|{{ (1, 2) }}", "{}",
   "[1, 'a', None, True, 1.5, [2], {'k': 'v'}]|{'a': \"it's\"}|(1,)|(1, 2)"},
  {"slicing", "{{ s[1:3] }}|{{ s[::-1] }}|{{ s[-2:] }}|{{ l[::2] }}|{{ l[1:-1] }}|{{ l[::-1] }}|{{ s[0] }}{{ s[-1] }}", R"({"s": "héllo", "l": [1,2,3,4,5]})",
   "él|olléh|lo|[1, 3, 5]|[2, 3, 4]|[5, 4, 3, 2, 1]|ho"},
  {"getattr_getitem", "{{ m.role }}|{{ m['content'] }}|{{ m.missing }}|{{ l[5] }}|{{ l.0 }}|{{ m.items()|list }}", R"({"m": {"role": "user", "content": "hi"}, "l": [7]})",
   "user|hi|||7|[('role', 'user'), ('content', 'hi')]"},
  // Whitespace control.
  {"trim_blocks", "{% if true %}\nA\n{% endif %}\nB", "{}", "A\nB"},
  {"lstrip_blocks", "x\n    {% if true %}\n    yes\n    {% endif %}\ny", "{}", "x\n    yes\ny"},
  {"minus_markers", "a   {{- ' b ' -}}   c\n  {%- if true -%}  d  {%- endif -%}\n e", "{}", "a b cde"},
  {"plus_markers", "x\n    {%+ if true %}y{% endif +%}\nz", "{}", "x\n    y\nz"},
  {"comments", "a {# note #} b\n{# own line #}\nc {#- tight -#} d", "{}", "a  b\ncd"},
  {"trailing_newline", "line\n", "{}", "line"},
  {"raw", "{% raw %}{{ not evaluated }}{% endraw %}", "{}", "{{ not evaluated }}"},
  {"variable_no_trim", "{{ 'v' }}\nnext", "{}", "v\nnext"},
  // Loops.
  {"loop_vars", "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first|int }}{{ loop.last|int }}{{ loop.length }} {% endfor %}", "{}",
   "1032103 2121003 3210013 "},
  {"loop_prev_next", "{% for x in [1, 2, 3] %}[{{ loop.previtem }}|{{ loop.nextitem }}]{% endfor %}", "{}",
   "[|2][1|3][2|]"},
  {"loop_else", "{% for x in [] %}x{% else %}empty{% endfor %}", "{}", "empty"},
  {"loop_filter", "{% for x in range(10) if x is odd %}{{ x }}{{ ',' if not loop.last }}{% endfor %}", "{}", "1,3,5,7,9"},
  {"loop_unpack", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for a, b in [[1, 2], (3, 4)] %}{{ a + b }}{% endfor %}", R"({"d": {"z": 1, "a": 2}})",
   "z=1;a=2;37"},
  {"break_continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}", "{}", "0134"},
  {"loop_cycle", "{% for x in range(5) %}{{ loop.cycle('a', 'b') }}{% endfor %}", "{}", "ababa"},
  {"nested_loops", "{% for a in [1, 2] %}{% for b in 'xy' %}{{ loop.index }}{{ b }}{% endfor %}{{ loop.index }};{% endfor %}", "{}", "1x2y1;1x2y2;"},
  {"loop_scope", "{% set x = 0 %}{% for i in [1, 2] %}{{ x }}{% set x = i %}{{ x }}{% endfor %}{{ x }}", "{}", "01020"},
  {"iterate_dict", "{% for k in d %}{{ k }}{% endfor %}", R"({"d": {"b": 1, "a": 2}})", "ba"},
  // set, namespace, with.
  {"set_namespace", "{% set ns = namespace(found=false, n=0) %}{% for x in [1, 2, 3] %}{% if x > 1 %}{% set ns.found = true %}{% set ns.n = ns.n + x %}{% endif %}{% endfor %}{{ ns.found }} {{ ns.n }}", "{}",
   "True 5"},
  {"set_tuple", "{% set a, b = 1, 'two' %}{{ a }}{{ b }}", "{}", "1two"},
  {"set_block", "{% set block %}  hi {{ 1 + 1 }}{% endset %}[{{ block }}]", "{}", "[  hi 2]"},
  {"set_block_filter", "{% set t | upper %}abc{% endset %}{{ t }}", "{}", "ABC"},
  {"if_elif_else", "{% for x in [1, 2, 3] %}{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %} {% endfor %}", "{}", "one two many "},
  {"if_set_leaks", "{% if true %}{% set y = 5 %}{% endif %}{{ y }}", "{}", "5"},
  {"with_block", "{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}{{ a }}", "{}", "3"},
  // Macros.
  {"macro_defaults", "{% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}{{ greet('Bob') }} {{ greet('Al', greeting='Hi') }} {{ greet('X', 'Yo') }}", "{}",
   "Hello, Bob! Hi, Al! Yo, X!"},
  {"macro_recursion", "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% endmacro %}{{ fact(5) }}", "{}", "120"},
  {"macro_sees_globals", "{% set g = 'G' %}{% macro m() %}{{ g }}{{ top }}{% endmacro %}{{ m() }}", R"({"top": "T"})", "GT"},
  {"call_block", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}bold {{ 1 }}{% endcall %}", "{}", "<b>bold 1</b>"},
  {"filter_block", "{% filter upper %}shout {{ 'it' }}{% endfilter %}", "{}", "SHOUT IT"},
  // Tests.
  {"tests_types", "{{ x is defined }}{{ y is undefined }}{{ nn is none }}{{ s is string }}{{ i is number }}{{ i is integer }}{{ f is float }}{{ d is mapping }}{{ l is iterable }}{{ s is sequence }}{{ b is boolean }}{{ b is true }}{{ b is false }}{{ i is integer and b is not integer }}", R"({"x": 1, "nn": null, "s": "a", "i": 3, "f": 1.5, "d": {}, "l": [], "b": true})",
   "TrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueFalseTrue"},
  {"tests_numbers", "{{ 4 is even }}{{ 3 is odd }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(2) }}{{ 2 is in [1, 2] }}{{ 3 is eq 3 }}{{ 3 is lt 4 }}{{ 3 is ge 4 }}{{ 'a' is sameas 'a' }}{{ none is sameas none }}", "{}",
   "TrueTrueTrueFalseTrueTrueTrueFalseTrueTrue"},
  {"undefined_tests", "{{ u is iterable }}{{ u is sequence }}{{ u is mapping }}{{ u is string }}{{ u|length }}{{ u|list }}{{ u|default('d') }}{{ u|string }}.", "{}",
   "TrueTrueFalseFalse0[]d."},
  // Filters.
  {"tojson_default", "{{ v|tojson }}", R"({"v": {"b": [1, 2.5, null, true], "a": "é\"\n\u0001", "c": {}}})",
   "{\"b\": [1, 2.5, null, true], \"a\": \"é\\\"\\n\\u0001\", \"c\": {}}"},
  {"tojson_indent", "{{ v|tojson(indent=2) }}|{{ [] | tojson(indent=2) }}|{{ v|tojson(separators=(',', ':'), sort_keys=true) }}", R"({"v": {"b": [1, {"x": 1}], "a": "ü"}})",
   "{\n  \"b\": [\n    1,\n    {\n      \"x\": 1\n    }\n  ],\n  \"a\": \"ü\"\n}|[]|{\"a\":\"ü\",\"b\":[1,{\"x\":1}]}"},
  {"tojson_ascii", "{{ s|tojson(ensure_ascii=true) }}|{{ s|tojson }}", R"({"s": "é😀"})",
   "\"\\u00e9\\ud83d\\ude00\"|\"é😀\""},
  {"string_filters", "{{ '  a b  '|trim }}|{{ 'xxhixx'|trim('x') }}|{{ 'Hello'|upper }}{{ 'Hello'|lower }}|{{ 'hello world-foo (bar)'|title }}|{{ 'hELLO'|capitalize }}|{{ 'aaa'|replace('a', 'b', 2) }}", "{}",
   "a b|hi|HELLOhello|Hello World-Foo (Bar)|Hello|bba"},
  {"length_join", "{{ 'héllo'|length }} {{ [1, 2]|count }} {{ {'a': 1}|length }} {{ [1, 'a', none]|join(', ') }} {{ 'abc'|join('-') }} {{ users|join(',', attribute='name') }}", R"({"users": [{"name": "a"}, {"name": "b"}]})",
   "5 2 1 1, a, None a-b-c a,b"},
  {"first_last", "{{ [3, 4]|first }}{{ [3, 4]|last }}{{ 'xyz'|first }}{{ []|first }}.", "{}", "34x."},
  {"default", "{{ u|default('x') }}{{ ''|default('y') }}{{ ''|default('z', true) }}{{ none|d('n') }}{{ 0|d(5, boolean=true) }}", "{}", "xzNone5"},
  {"items_list", "{{ d|items|list }}{{ 'ab'|list }}{{ d|list }}", R"({"d": {"k": [1]}})", "[('k', [1])]['a', 'b']['k']"},
  {"select_map", "{{ msgs|selectattr('role', 'equalto', 'user')|map(attribute='content')|join(',') }}|{{ msgs|rejectattr('role', 'eq', 'user')|list|length }}|{{ [1, 0, 2]|select|list }}|{{ [1, 2, 3, 4]|reject('odd')|list }}|{{ ['a', 'B']|map('upper')|list }}|{{ msgs|selectattr('flag')|list|length }}", R"({"msgs": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b", "flag": true}, {"role": "user", "content": "c"}]})",
   "a,c|1|[1, 2]|[2, 4]|['A', 'B']|1"},
  {"sort_unique_reverse", "{{ ['b', 'A', 'c']|sort }}|{{ ['b', 'A', 'c']|sort(case_sensitive=true) }}|{{ [3, 1, 2]|sort(reverse=true) }}|{{ ['a', 'A', 'b']|unique|list }}|{{ [1, 2, 3]|reverse|list }}|{{ 'abc'|reverse }}|{{ people|sort(attribute='age')|map(attribute='n')|join }}", R"({"people": [{"n": "x", "age": 3}, {"n": "y", "age": 1}]})",
   "['A', 'b', 'c']|['A', 'b', 'c']|[3, 2, 1]|['a', 'b']|[3, 2, 1]|cba|yx"},
  {"numbers_filters", "{{ '42'|int }} {{ 'x'|int(7) }} {{ 3.9|int }} {{ '2.5'|float }} {{ -3|abs }} {{ 2.567|round(2) }} {{ 2.5|round }} {{ 3.5|round }} {{ 2.1|round(0, 'ceil') }} {{ [1, 2.5]|sum }} {{ [4, 9, 1]|max }} {{ [4, 9, 1]|min }}", "{}",
   "42 7 3 2.5 3 2.57 2.0 4.0 3.0 3.5 9 1"},
  {"indent", "{{ 'a\nb\n\nc'|indent(2) }}|{{ 'x\ny'|indent(2, true) }}|{{ 'p\n\nq'|indent('> ', blank=true) }}", "{}",
   "a\n  b\n\n  c|  x\n  y|p\n> \n> q"},
  {"misc_filters", "{{ 'a b  c'|wordcount }} {{ [1, 2, 3, 4, 5]|batch(2)|list }} {{ 'x'|center(5) }}| {{ '<a&b>'|e }} {{ d|dictsort }} {{ d|attr('b') }}", R"({"d": {"b": 1, "a": 2}})",
   "3 [[1, 2], [3, 4], [5]]   x  | &lt;a&amp;b&gt; [('a', 2), ('b', 1)] "},
  // String methods.
  {"str_methods", "{{ 'a,b,,c'.split(',') }}|{{ '  a  b '.split() }}|{{ 'a b c'.split(' ', 1) }}|{{ 'a-b-c'.rsplit('-', 1) }}|{{ 'xxhixx'.strip('x') }}|{{ '\n hi \n'.lstrip() }}|{{ 'hi!!'.rstrip('!') }}", "{}",
   "['a', 'b', '', 'c']|['a', 'b']|['a', 'b c']|['a-b', 'c']|hi|hi \n|hi"},
  {"str_methods2", "{{ 'Hello'.startswith('He') }}{{ 'Hello'.endswith(('x', 'lo')) }}{{ 'abcabc'.find('c') }}{{ 'abcabc'.rfind('c') }}{{ 'abcabc'.count('b') }}{{ 'ab'.replace('a', 'A') }}{{ 'hi there'.title() }}{{ \"they're\".title() }}{{ 'mIxEd'.upper() }}{{ 'mIxEd'.lower() }}{{ 'x'.capitalize() }}", "{}",
   "TrueTrue252AbHi ThereThey'ReMIXEDmixedX"},
  {"str_methods3", "{{ '-'.join(['a', 'b']) }} {{ '{} and {name}'.format(1, name='n') }} {{ '123'.isdigit() }} {{ 'abc'.isalpha() }} {{ ' '.isspace() }} {{ 'a\nb'.splitlines() }} {{ 'ab'.upper().lower() }}", "{}",
   "a-b 1 and n True True True ['a', 'b'] ab"},
  {"think_split", "{{ c.split('</think>')[-1].lstrip('\n') }}|{{ c.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') }}", R"({"c": "<think>\nreason\n</think>\n\nanswer"})",
   "answer|reason"},
  {"dict_methods", "{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 0) }} {{ d.keys()|list }} {{ d.values()|list }}", R"({"d": {"a": 1, "b": 2}})",
   "1 None 0 ['a', 'b'] [1, 2]"},
  {"globals", "{{ range(3)|list }} {{ range(1, 7, 2)|list }} {{ dict(a=1, b='x') }} {{ namespace(v=3).v }}", "{}",
   "[0, 1, 2] [1, 3, 5] {'a': 1, 'b': 'x'} 3"},
  {"dict_literal_and_lookup", "{% set m = {'string': 'str', 'integer': 'int'} %}{{ m[t] }}{{ m[u] is defined }}{{ m['string'] }}", R"({"t": "integer"})",
   "intFalsestr"},
  {"printf", "{{ '%s|%5.2f|%-4d|%03i|%x|%r|%%' % ('a', 3.14159, 7, 5, 255, 'q') }} {{ '%(k)s=%(v)d' % {'k': 'x', 'v': 2} }} {{ 'n=%s' % none }} {{ '%s and %s'|format(1, [2]) }}", "{}",
   "a| 3.14|7   |005|ff|'q'|% x=2 n=None 1 and [2]"},
  // Expected outputs below were produced by Python Jinja2 (scripts/render_template.py).
  {"escapes2", "{{ '\\d\\w' }}|{{ \"\\101\\x42\\u0043\\U0001F600\" }}|{{ 'a\\\nb' }}", "{}",
   "\\d\\w|ABC😀|ab"},
  {"int_literals", "{{ 1_000 }} {{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 1.5e3 }} {{ 2E-2 }}", "{}",
   "1000 31 15 5 1500.0 0.02"},
  {"bool_arith", "{{ true + 1 }} {{ false * 3 }} {{ true / 2 }} {{ -true }}", "{}",
   "2 0 0.5 -1"},
  {"neg_zero_float", "{{ -0.0 }} {{ 0.0 * -1 }} {{ 1e-7 }} {{ 1e15 }} {{ 1.0e16 }} {{ 12345.678 }}", "{}",
   "-0.0 -0.0 1e-07 1000000000000000.0 1e+16 12345.678"},
  {"tuple_compare", "{{ (1, 2) < (1, 3) }} {{ [1, 2] < [1, 2, 0] }} {{ (1, 2) == [1, 2] }}", "{}",
   "True True False"},
  {"unicode_case", "{{ 'éàü ÉÀ straße'|upper }}|{{ 'ÉÀÜ Σ'|lower }}|{{ 'élan vital'|title }}|{{ 'ÿ'|upper }}", "{}",
   "ÉÀÜ ÉÀ STRASSE|éàü σ|Élan Vital|Ÿ"},
  {"first_dict_len", "{{ d|first }} {{ d|length }} {{ d|string }} {{ [1, 'a']|string }}", "{\"d\": {\"k1\": 1, \"k2\": 2}}",
   "k1 2 {'k1': 1, 'k2': 2} [1, 'a']"},
  {"map_trim", "{{ ['  a ', ' b']|map('trim')|join('|') }} {{ ['a', 'b']|map('replace', 'a', 'z')|list }}", "{}",
   "a|b ['z', 'b']"},
  {"sort_dicts", "{{ items|sort(attribute='w')|map(attribute='n')|list }} {{ items|map(attribute='missing', default='D')|list }}", "{\"items\": [{\"n\": \"b\", \"w\": 2}, {\"n\": \"a\", \"w\": 1}]}",
   "['a', 'b'] ['D', 'D']"},
  {"tojson_nested_tuple", "{{ d.items()|list|tojson }} {{ (1, 'x')|tojson }} {{ 1.0|tojson }} {{ 1e20|tojson }}", "{\"d\": {\"a\": [1, {}]}}",
   "[[\"a\", [1, {}]]] [1, \"x\"] 1.0 1e+20"},
  {"caller_args", "{% macro m() %}[{{ caller('x', 2) }}]{% endmacro %}{% call(a, b) m() %}{{ a }}{{ b }}{% endcall %}", "{}",
   "[x2]"},
  {"macro_kwargs_varargs", "{% macro m(a) %}{{ a }}{{ kwargs }}{{ varargs }}{% endmacro %}{{ m(1, z=2) }}", "{}",
   "1{'z': 2}()"},
  {"macro_missing_arg", "{% macro m(a, b) %}{{ a }}|{{ b }}|{{ b is defined }}{% endmacro %}{{ m(1) }}", "{}",
   "1||False"},
  {"ns_in_macro", "{% set ns = namespace(c=0) %}{% macro inc() %}{% set ns.c = ns.c + 1 %}{% endmacro %}{{ inc() }}{{ inc() }}{{ ns.c }}", "{}",
   "2"},
  {"loop_length_filtered", "{% for x in [1, 2, 3, 4] if x > 1 %}{{ loop.index }}/{{ loop.length }}{{ loop.last }} {% endfor %}", "{}",
   "1/3False 2/3False 3/3True "},
  {"dict_in_and_eq", "{{ {'a': 1} == {'a': 1.0} }} {{ 'a' in {'a': 1} }} {{ 1 in {'a': 1} }}", "{}",
   "True True False"},
  {"none_compare_eq", "{{ none == none }} {{ none != 0 }} {{ u == u2 }} {{ u == none }}", "{}",
   "True True True False"},
  {"str_mult", "{{ 'ab' * 3 }} {{ 2 * 'x' }} {{ [0] * 3 }} {{ '-' * 0 }}", "{}",
   "ababab xx [0, 0, 0] "},
  {"slices_more", "{{ 'abcdef'[1:5:2] }} {{ 'abcdef'[-1:-4:-1] }} {{ 'abc'[5:] }} {{ [1, 2, 3][-10:2] }} {{ 'abc'[::-2] }}", "{}",
   "bd fed  [1, 2] ca"},
  {"strip_unicode_ws", "[{{ '\\u3000 x \\u00a0'|trim }}] [{{ ' \\u2003y'.strip() }}] {{ 'a\\u3000b'.split() }}", "{}",
   "[x] [y] ['a', 'b']"},
  {"split_maxsplit", "{{ ' a  b  c '.split(None, 1) }} {{ ' a  b  c '.rsplit(None, 1) }} {{ 'a,b,c'.split(',', 0) }} {{ ''.split() }} {{ ''.split(',') }}", "{}",
   "['a', 'b  c '] [' a  b', 'c'] ['a,b,c'] [] ['']"},
  {"replace_empty", "{{ 'abc'.replace('', '-') }} {{ 'aaaa'.replace('a', 'b', 2) }}", "{}",
   "-a-b-c- bbaa"},
  {"round_cases", "{{ 0.125|round(2) }} {{ 0.375|round(2) }} {{ 2.675|round(2) }} {{ 1.5|round }} {{ -1.5|round }} {{ 5|round }} {{ 3.14159|round(3, 'floor') }}", "{}",
   "0.12 0.38 2.67 2.0 -2.0 5 3.141"},
  {"int_float_filters", "{{ ' 12 '|int }} {{ '1_000'|int }} {{ '0x10'|int(0, 16) }} {{ '3.7'|int }} {{ 'abc'|float }} {{ true|int }} {{ none|int }} {{ '1e3'|float }}", "{}",
   "12 1000 16 3 0.0 1 0 1000.0"},
  {"join_nested", "{{ [[1, 2], [3]]|join(';') }} {{ [none, true]|join }}", "{}",
   "[1, 2];[3] NoneTrue"},
  {"is_tests_more", "{{ 'abc' is lower }}{{ 'ABC' is upper }}{{ 'aB' is lower }}{{ range is callable }}{{ 1.0 is integer }}{{ true is number }}{{ d is sequence }}{{ 5 is iterable }}", "{\"d\": {}}",
   "TrueTrueFalseTrueFalseTrueTrueFalse"},
  {"cond_chain", "{{ 'a' if false else 'b' if false else 'c' }} {{ (1 if true else 2) + 10 }}", "{}",
   "c 11"},
  {"whitespace_in_tags", "{%set x=1%}{{x}}{%if x==1%}a{%endif%}{{'b'|upper}}", "{}",
   "1aB"},
  {"dict_literal_trailing", "{{ {'a': 1, 'b': [1, 2,], } }} {{ [1, 2, ] }} {{ (1, 2, ) }}", "{}",
   "{'a': 1, 'b': [1, 2]} [1, 2] (1, 2)"},
  {"attr_chain_items", "{% for k, v in d|dictsort %}{{ k }}{{ v }}{% endfor %} {{ d.a.b }}", "{\"d\": {\"a\": {\"b\": 5}, \"0\": 1}}",
   "01a{'b': 5} 5"},
  {"reject_equalto", "{{ ['a', 'code_interpreter', 'b']|reject('equalto', 'code_interpreter')|join(', ') }}", "{}",
   "a, b"},
  {"get_on_ns_item", "{% set ns = namespace(a=1) %}{{ ns['a'] }} {{ ns.b }}", "{}",
   "1 "},
  {"str_format_more", "{{ '{0}-{0}-{1}'.format('a', 'b') }} {{ '{{literal}}'.format() }}", "{}",
   "a-a-b {literal}"},
  {"count_find_unicode", "{{ '日本語日本'.find('本') }} {{ '日本語日本'.rfind('本') }} {{ '日本語日本'.count('日本') }} {{ '日本語'|length }}", "{}",
   "1 4 2 3"},
  {"startswith_tuple", "{{ 'hello'.startswith(('x', 'he')) }} {{ 'hello'.endswith('') }}", "{}",
   "True True"},
  {"loop_in_macro_in_loop", "{% macro row(xs) %}{% for x in xs %}{{ loop.index }}{{ x }}{% endfor %}{% endmacro %}{% for r in [[1], [2, 3]] %}{{ loop.index }}:{{ row(r) }};{% endfor %}", "{}",
   "1:11;2:1223;"},
  {"set_in_loop_not_leaking", "{% set found = false %}{% for x in [1] %}{% set found = true %}{% endfor %}{{ found }}", "{}",
   "False"},
  {"string_iteration_unicode", "{% for c in 'h😀é' %}[{{ c }}]{% endfor %}{{ 'h😀é'|list|length }}", "{}",
   "[h][😀][é]3"},
  {"sum_attr", "{{ xs|sum(attribute='v') }} {{ [1.5, 2]|sum }} {{ []|sum }}", "{\"xs\": [{\"v\": 1}, {\"v\": 2}]}",
   "3 3.5 0"},
  {"unique_attr", "{{ xs|unique(attribute='k')|map(attribute='v')|list }}", "{\"xs\": [{\"k\": \"A\", \"v\": 1}, {\"k\": \"a\", \"v\": 2}, {\"k\": \"b\", \"v\": 3}]}",
   "[1, 3]"},
  {"max_attr_case", "{{ ['b', 'A', 'C']|max }} {{ ['b', 'A', 'C']|max(case_sensitive=true) }} {{ xs|min(attribute='v') }}", "{\"xs\": [{\"v\": 3}, {\"v\": 1}]}",
   "C b {'v': 1}"},
  {"bool_none_output", "{{ true }} {{ false }} {{ none }} {{ nn }} {{ x }}", R"({"nn": null, "x": false})",
   "True False None None False"},
};
// clang-format on

Case snippet_case(const Snippet& s) {
  ojson request = ojson::parse(s.vars);
  request["messages"] = ojson::array();
  return Case{s.name, s.source, request, "<s>", "</s>"};
}

TEST(ChatInterpreter, SnippetsRenderTheExpectedText) {
  for (const Snippet& s : kSnippets) {
    Rendered got = render_with_minfer(snippet_case(s));
    EXPECT_TRUE(got.ok) << s.name << ": " << got.output;
    EXPECT_EQ(got.output, s.expected) << s.name;
  }
}

TEST(ChatInterpreter, SnippetsMatchJinja2) {
  MINFER_REQUIRE_PYTHON_JINJA2();
  std::vector<Case> cases;
  for (const Snippet& s : kSnippets) cases.push_back(snippet_case(s));
  int rendered = expect_same_as_python(cases);
  EXPECT_EQ(rendered, static_cast<int>(cases.size()));
}

// Templates that must fail at render time, in Jinja2 and in minfer alike.
const Snippet kRuntimeErrors[] = {
    {"raise_exception", "a{{ raise_exception('Bad roles: ' ~ 1) }}", "{}", "Bad roles: 1"},
    {"undefined_attribute", "{{ nothing.attr }}", "{}", "'nothing' is undefined"},
    {"undefined_arithmetic", "{{ nothing + 1 }}", "{}", "'nothing' is undefined"},
    {"str_plus_int", "{{ 'a' + 1 }}", "{}", "unsupported operand"},
    {"tojson_undefined", "{{ nothing|tojson }}", "{}", "not JSON serializable"},
    {"list_append_unsafe", "{% set l = [] %}{{ l.append(1) }}", "{}", "unsafe"},
    {"dict_update_unsafe", "{% set d = {} %}{{ d.update({'a': 1}) }}", "{}", "unsafe"},
    {"call_undefined_method", "{{ none.strip() }}", "{}", "undefined"},
    {"none_not_iterable", "{% for x in nn %}{% endfor %}", R"({"nn": null})", "not iterable"},
    {"in_none", "{{ 'a' in nn }}", R"({"nn": null})", "not iterable"},
    {"compare_mixed", "{{ 1 < 'a' }}", "{}", "not supported"},
    {"division_by_zero", "{{ 1 // 0 }}", "{}", "zero"},
    {"set_attr_on_dict", "{% set d = {} %}{% set d.x = 1 %}", "{}", "non-namespace"},
    {"strip_int_arg", "{{ 'x'.strip(1) }}", "{}", "must be str"},
    {"split_empty_sep", "{{ 'x'.split('') }}", "{}", "empty separator"},
    {"unpack_mismatch", "{% for a, b in [[1, 2, 3]] %}{% endfor %}", "{}", "unpack"},
    {"items_on_list", "{{ [1]|items|list }}", "{}", "mapping"},
    {"int_plus_str", "{{ 1 + 2|string }}", "{}", "unsupported operand"},
    {"printf_missing_arg", "{{ '%s %s' % ('a',) }}", "{}", "not enough arguments"},
};

TEST(ChatInterpreter, RuntimeErrorsAreStatusesNamingTheProblem) {
  for (const Snippet& s : kRuntimeErrors) {
    Rendered got = render_with_minfer(snippet_case(s));
    EXPECT_FALSE(got.ok) << s.name << " rendered: " << got.output;
    EXPECT_NE(got.output.find(s.expected), std::string::npos) << s.name << ": " << got.output;
    EXPECT_EQ(got.output.rfind("[chat] template line 1: ", 0), 0u) << s.name << ": " << got.output;
  }
}

TEST(ChatInterpreter, IntegerOverflowIsAnErrorNotAWrappedValue) {
  // Python's integers are unbounded; ours are 64-bit, so a result past them is an error (found
  // by the template fuzzer: '10 ** 40 * 40' was signed overflow).
  for (const char* expr : {"10 ** 40 * 40", "2 ** 63", "(-2) ** 64", "9223372036854775807 + 1",
                           "-9223372036854775807 - 2", "3037000500 * 3037000500",
                           "-(-9223372036854775807 - 1)", "(-9223372036854775807 - 1) // -1",
                           "[9223372036854775807, 1]|sum", "(-9223372036854775807 - 1)|abs"}) {
    Rendered got = render_with_minfer(
        snippet_case({"overflow", (std::string("{{ ") + expr + " }}").c_str(), "{}", ""}));
    EXPECT_FALSE(got.ok) << expr << " rendered: " << got.output;
    EXPECT_NE(got.output.find("integer overflow"), std::string::npos) << expr << ": " << got.output;
  }
  // A float past 64 bits does not become an integer (Python's would be unbounded).
  for (const char* expr : {"1e300|int", "'1e300'|int", "'%d' % 1e300", "'%c' % 1114112"}) {
    Rendered got = render_with_minfer(
        snippet_case({"float", (std::string("{{ ") + expr + " }}").c_str(), "{}", ""}));
    EXPECT_FALSE(got.ok) << expr << " rendered: " << got.output;
  }
  // What fits is exact, at the edges too.
  for (auto [expr, want] :
       {std::pair{"2 ** 62", "4611686018427387904"},
        std::pair{"(-2) ** 63", "-9223372036854775808"},
        std::pair{"9223372036854775806 + 1", "9223372036854775807"},
        std::pair{"(-9223372036854775807 - 1) % -1", "0"}, std::pair{"1 ** 1000000000000", "1"},
        std::pair{"(-1) ** 1000000000001", "-1"},
        std::pair{"[9007199254740993, 0]|sum", "9007199254740993"},  // not through a double
        std::pair{"-9.9|int", "-9"}, std::pair{"'%d' % -2.5", "-2"}}) {
    Rendered got = render_with_minfer(
        snippet_case({"fits", (std::string("{{ ") + expr + " }}").c_str(), "{}", ""}));
    EXPECT_TRUE(got.ok) << expr << ": " << got.output;
    EXPECT_EQ(got.output, want) << expr;
  }
}

TEST(ChatInterpreter, RuntimeErrorsAreErrorsInJinja2Too) {
  MINFER_REQUIRE_PYTHON_JINJA2();
  std::vector<Case> cases;
  for (const Snippet& s : kRuntimeErrors) cases.push_back(snippet_case(s));
  EXPECT_EQ(expect_same_as_python(cases), 0);
}

struct ParseError {
  const char* source;
  const char* message;  // the whole Status message
};

TEST(ChatInterpreter, UnsupportedConstructsFailAtLoadNamingConstructAndLine) {
  const ParseError kCases[] = {
      {"line1\nline2\n{{ x|wordwrap(10) }}",
       "[chat] template line 3: unsupported filter 'wordwrap'"},
      {"{% if x is prime %}{% endif %}", "[chat] template line 1: unsupported test 'prime'"},
      {"\n{% include 'other.jinja' %}", "[chat] template line 2: unsupported tag 'include'"},
      {"{% extends 'base' %}", "[chat] template line 1: unsupported tag 'extends'"},
      {"{% generation %}x{% endgeneration %}",
       "[chat] template line 1: unsupported tag 'generation'"},
      {"{{ lipsum(3) }}", "[chat] template line 1: unsupported function 'lipsum'"},
      {"{{ 'x'.zfill(3) }}", "[chat] template line 1: unsupported method 'zfill'"},
      {"{% for x in y recursive %}{% endfor %}",
       "[chat] template line 1: unsupported construct 'recursive' loop"},
      {"{% break %}", "[chat] template line 1: 'break' outside of a loop"},
      {"{% if x %}\nno end",
       "[chat] template line 2: unexpected end of template: expected 'endif'"},
      {"{{ x ", "[chat] template line 1: unexpected end of template: missing '}}'"},
      {"{{ (1 }}", "[chat] template line 1: unexpected '}', expected ')'"},
      {"{# never closed", "[chat] template line 1: missing end of comment tag"},
      {"{{ f(*args) }}",
       "[chat] template line 1: unsupported construct '*args' or '**kwargs' in a call"},
  };
  for (const ParseError& c : kCases) {
    auto t = ChatTemplate::create(c.source, "", "");
    ASSERT_FALSE(t.is_ok()) << c.source;
    EXPECT_EQ(t.status().message(), c.message) << c.source;
    EXPECT_EQ(t.status().code(), ErrorCode::kInvalidArgument);
  }
}

TEST(ChatInterpreter, MacrosAndAssignedNamesMayBeCalled) {
  auto t = ChatTemplate::create(
      "{% macro outer() %}{{ inner() }}{% endmacro %}{% macro inner() %}in{% endmacro %}"
      "{% set f = raise_exception %}{{ outer() }}",
      "", "");
  ASSERT_TRUE(t.is_ok()) << t.status().message();
  auto out = t->render(ojson::array(), nullptr, false, ojson::object());
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  EXPECT_EQ(out.value(), "in");
}

TEST(ChatInterpreter, ToolsIsDefinedAndNoneWhenAbsent) {
  auto t = ChatTemplate::create(
      "{{ tools is defined }} {{ tools is none }} {{ documents is none }} {{ bos_token }}{{ "
      "eos_token }} {{ add_generation_prompt }}",
      "<s>", "</s>");
  ASSERT_TRUE(t.is_ok());
  auto out = t->render(ojson::array(), nullptr, true, ojson::object());
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  EXPECT_EQ(out.value(), "True True True <s></s> True");
}

TEST(ChatInterpreter, ObjectKeysKeepTheCallersOrder) {
  auto t = ChatTemplate::create("{{ tools[0]|tojson }}", "", "");
  ASSERT_TRUE(t.is_ok());
  ojson tools = ojson::parse(R"([{"zeta": 1, "alpha": {"y": 2, "b": 3}}])");
  auto out = t->render(ojson::array(), tools, true, ojson::object());
  ASSERT_TRUE(out.is_ok());
  EXPECT_EQ(out.value(), R"({"zeta": 1, "alpha": {"y": 2, "b": 3}})");
}

TEST(ChatInterpreter, BadInputsAreErrors) {
  auto t = ChatTemplate::create("x", "", "");
  ASSERT_TRUE(t.is_ok());
  EXPECT_FALSE(t->render(ojson::object(), nullptr, true, ojson::object()).is_ok());
  EXPECT_FALSE(t->render(ojson::array(), ojson("tools"), true, ojson::object()).is_ok());
  EXPECT_FALSE(t->render_request(ojson::parse(R"({"no_messages": 1})")).is_ok());
  EXPECT_FALSE(
      t->render_request(ojson::parse(R"({"messages": [], "add_generation_prompt": "yes"})"))
          .is_ok());
}

}  // namespace
}  // namespace minfer::chat::test
