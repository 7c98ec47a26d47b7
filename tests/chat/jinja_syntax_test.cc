// Jinja statement and whitespace semantics: trim_blocks, lstrip_blocks, '-' and '+', comments,
// raw blocks, if/for/set/with/filter blocks, loop variables, loop controls, scoping and macros.
// Expected strings are what Python's jinja2 3.1 renders in transformers' environment
// (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, transformers' tojson).
#include <gtest/gtest.h>

#include "chat/jinja_test_util.h"

namespace anvil::test {
namespace {

// trim_blocks removes the newline after a block tag, lstrip_blocks the indentation before it.
TEST(JinjaSyntax, TrimBlocksAndLstripBlocks) {
  expect_renders({
      {"block tags on their own lines vanish", R"J(  {% if true %}
  x
  {% endif %}
  y)J",
       "{}",
       R"J(  x
  y)J"},
      {"for loop body keeps its own lines", R"J({% for i in [1,2] %}
  {{ i }}
{% endfor %}
done)J",
       "{}",
       R"J(  1
  2
done)J"},
      {"only the first newline after a tag goes", R"J(a
{% if true %}

b
{% endif %}

c)J",
       "{}",
       R"J(a

b

c)J"},
      {"lstrip only up to the line start", "x  {% if true %}y{% endif %}", "{}", "x  y"},
      {"tabs are stripped too", R"J(	{% set x = 1 %}
	{{ x }})J",
       "{}", R"J(	1)J"},
      {"expressions are not lstripped", R"J(  {{ 'v' }}  
  {{ 'w' }})J",
       "{}",
       R"J(  v  
  w)J"},
      {"newline after expression is kept", R"J({{ 1 }}
{{ 2 }}
)J",
       "{}",
       R"J(1
2)J"},
      {"one trailing newline of the template is dropped", R"J(hello
)J",
       "{}", "hello"},
      {"only one trailing newline is dropped", R"J(hello

)J",
       "{}",
       R"J(hello
)J"},
      {"CRLF and CR become LF", "a\r\nb\rc{% if true %}\r\nd{% endif %}", "{}",
       R"J(a
b
cd)J"},
      {"comment lines vanish like block lines", R"J(x
  {# note #}
y)J",
       "{}",
       R"J(x
y)J"},
      {"lstrip applies after a block tag that ended a line", R"J({% if true %}
    {% if true %}in{% endif %}
{% endif %})J",
       "{}", "in"},
  });
}
// '-' strips all whitespace on its side of a tag; '+' keeps the indentation before a block tag.
TEST(JinjaSyntax, WhitespaceControl) {
  expect_renders({
      {"minus strips both sides", "a  {%- if true -%}  b  {%- endif -%}  c", "{}", "abc"},
      {"minus on expressions", "a {{- ' b ' -}} c", "{}", "a b c"},
      {"minus strips newlines", R"J(a

  {{- 'x' }}

  {{- 'y' -}}

 z)J",
       "{}", "axyz"},
      {"plus disables lstrip", "  {%+ if true %}k{% endif %}", "{}", "  k"},
      {"plus on the end disables trim_blocks", R"J({% if true +%}
k{% endif %})J",
       "{}",
       R"J(
k)J"},
      {"minus on comments", "x {#- comment -#}  y", "{}", "xy"},
      {"comment keeps trim_blocks", R"J(x {# c #}
y)J",
       "{}", "x y"},
      {"template made of stripped tags is empty", R"J({%- if x -%}

{%- endif -%}
)J",
       "{}", ""},
      {"typical chat template line structure", R"J({%- for m in ms %}
    {{- m ~ '\n' }}
{%- endfor %})J",
       R"J({"ms": ["a", "b"]})J",
       R"J(a
b
)J"},
  });
}
// raw blocks are copied verbatim; comments disappear.
TEST(JinjaSyntax, RawAndComments) {
  expect_renders({
      {"raw block", "{% raw %}{{ a }}{% if %}{% endraw %}", "{}", "{{ a }}{% if %}"},
      {"raw block whitespace", R"J(  {% raw %}
  x{{ y }}
  {% endraw %}
  z)J",
       "{}",
       R"J(
  x{{ y }}
  z)J"},
      {"raw block with minus", "a  {%- raw -%}  {{ a }}  {%- endraw -%}  z", "{}", "a{{ a }}z"},
      {"comment with tags inside", "a{# {{ x }} {% if %} #}b", "{}", "ab"},
      {"multi-line comment", R"J(a{# line
line
 #}b)J",
       "{}", "ab"},
  });
}
// if/elif/else with Python truthiness.
TEST(JinjaSyntax, IfElifElse) {
  expect_renders({
      {"if elif else",
       "{% for x in [1, 2, 3] %}{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %};{% "
       "endfor %}",
       "{}", "one;two;many;"},
      {"truthiness of values",
       "{% for v in [0, 1, '', 'a', [], [0], {}, none, 0.0] %}{% if v %}T{% else %}F{% endif %}{% "
       "endfor %}",
       "{}", "FTFTFTFFF"},
      {"undefined is false", "{% if nothing %}yes{% else %}no{% endif %}", "{}", "no"},
      {"nested if", "{% if a %}{% if b %}ab{% else %}a{% endif %}{% endif %}",
       R"J({"a": true, "b": false})J", "a"},
      {"python-style colon is allowed", "{% if true: %}ok{% endif %}", "{}", "ok"},
      {"unknown filters in untaken branches are fine",
       "{% if false %}{{ x|nope }}{% elif true %}a{% else %}{{ x is nope }}{% endif %}{{ 1 if true "
       "else x|nope }}",
       "{}", "a1"},
  });
}
// for loops: the loop object, loop controls, else, filters and unpacking.
TEST(JinjaSyntax, ForLoops) {
  expect_renders({
      {"loop variables",
       "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 "
       "}}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}",
       "{}", "1032TrueFalse3|2121FalseFalse3|3210FalseTrue3|"},
      {"previtem and nextitem",
       "{% for i in range(3) %}{{ loop.previtem }},{{ loop.nextitem }};{% endfor %}", "{}",
       ",1;0,2;1,;"},
      {"cycle", "{% for x in [1,2,3] %}{{ loop.cycle('odd', 'even') }} {% endfor %}", "{}",
       "odd even odd "},
      {"changed",
       "{% for x in [1,1,2,3,3] %}{% if loop.changed(x) %}{{ x }}{% endif %}{% endfor %}", "{}",
       "123"},
      {"depth", "{% for x in [1] %}{{ loop.depth }}{{ loop.depth0 }}{% endfor %}", "{}", "10"},
      {"loop object prints", "{% for x in [1,2] %}{{ loop }} {% endfor %}", "{}",
       "<LoopContext 1/2> <LoopContext 2/2> "},
      {"break and continue",
       "{% for x in [1,2,3,4,5] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break "
       "%}{% endif %}{{ x }}{% endfor %}",
       "{}", "13"},
      {"else runs for empty iterables", "{% for x in [] %}a{% else %}empty{% endfor %}", "{}",
       "empty"},
      {"else does not run otherwise", "{% for x in [1] %}a{% else %}empty{% endfor %}", "{}", "a"},
      {"else runs when every iteration breaks or continues",
       "{% for x in [1, 2] %}{% continue %}{% else %}E{% endfor %}|{% for x in [1, 2] %}{% break "
       "%}{% else %}E{% endfor %}|{% for x in [1, 2] %}{% if x == 2 %}{% break %}{% endif %}{% "
       "else %}E{% endfor %}",
       "{}", "E|E|"},
      {"undefined iterates as empty", "{% for x in missing %}a{% else %}none{% endfor %}", "{}",
       "none"},
      {"filter clause",
       "{% for x in range(10) if x is odd %}{{ x }}/{{ loop.index }}/{{ loop.length }} {% endfor "
       "%}",
       "{}", "1/1/5 3/2/5 5/3/5 7/4/5 9/5/5 "},
      {"dict iterates keys in order", "{% for k in d %}{{ k }}{% endfor %}",
       R"J({"d": {"z": 1, "a": 2, "m": 3}})J", "zam"},
      {"tuple unpacking over items()", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
       R"J({"d": {"b": 1, "a": [1, 2]}})J", "b=1;a=[1, 2];"},
      {"unpacking lists", "{% for a, b in [[1, 2], [3, 4]] %}{{ a * b }} {% endfor %}", "{}",
       "2 12 "},
      {"parenthesized targets", "{% for (a, b) in [(1, 2)] %}{{ a }}{{ b }}{% endfor %}", "{}",
       "12"},
      {"string iterates characters", "{% for c in 'héllo' %}[{{ c }}]{% endfor %}", "{}",
       "[h][é][l][l][o]"},
      {"nested loops have their own loop",
       "{% for x in [1,2] %}{% for y in 'ab' %}{{ loop.index }}{{ x }}{{ y }} {% endfor %}{{ "
       "loop.index }}|{% endfor %}",
       "{}", "11a 21b 1|12a 22b 2|"},
      {"break only leaves the inner loop",
       "{% for x in [1,2] %}{% for y in [1,2,3] %}{% if y == 2 %}{% break %}{% endif %}{{ x }}{{ y "
       "}} {% endfor %}{% endfor %}",
       "{}", "11 21 "},
      {"loop over a reversed slice", "{% for m in ms[::-1] %}{{ m }}{% endfor %}",
       R"J({"ms": [1, 2, 3]})J", "321"},
      {"loop over a generator filter",
       "{% for m in ms|selectattr('keep') %}{{ m.n }}{{ loop.length }}{% endfor %}",
       R"J({"ms": [{"n": 1, "keep": true}, {"n": 2, "keep": false}, {"n": 3, "keep": true}]})J",
       "1232"},
  });
}
// Which assignments are visible where: loop bodies and macros get their own scope, if does not.
TEST(JinjaSyntax, Scoping) {
  expect_renders({
      {"loop body sees outer variables, its sets stay inside",
       "{% set x = 1 %}{% for i in [1,2] %}{{ x }}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}", "{}",
       "12121"},
      {"each iteration starts fresh",
       "{% for i in [1,2] %}{% if i == 2 %}[{{ y }}]{% endif %}{% set y = i %}{% endfor %}[{{ y "
       "}}]",
       "{}", "[][]"},
      {"if blocks do not create a scope",
       "{% set x = 1 %}{% if true %}{% set x = 2 %}{% endif %}{{ x }}", "{}", "2"},
      {"namespace carries state out of loops",
       "{% set ns = namespace(count=0, last=none) %}{% for x in [1,2,3] %}{% set ns.count = "
       "ns.count + x %}{% set ns.last = x %}{% endfor %}{{ ns.count }} {{ ns.last }}",
       "{}", "6 3"},
      {"namespace from a dict and new attributes",
       "{% set ns = namespace({'a': 1}, b=2) %}{% set ns.c = 3 %}{{ ns.a }}{{ ns.b }}{{ ns.c }}{{ "
       "ns.d }}|{{ ns }}",
       "{}", "123|<Namespace {'a': 1, 'b': 2, 'c': 3}>"},
      {"namespace in nested loops",
       "{% set ns = namespace(found=false) %}{% for a in [1,2] %}{% for b in [3,4] %}{% if a * b "
       "== 6 %}{% set ns.found = true %}{% endif %}{% endfor %}{% endfor %}{{ ns.found }}",
       "{}", "True"},
      {"template set shadows context", "{{ x }}{% set x = 'local' %}{{ x }}", R"J({"x": "ctx"})J",
       "ctxlocal"},
      {"reassigning messages", "{% set messages = messages[1:] %}{{ messages|length }}",
       R"J({"messages": [1, 2, 3]})J", "2"},
      {"tuple assignment", "{% set a, b = 1, 'two' %}{{ a }}{{ b }}", "{}", "1two"},
      {"block set", "{% set s %}hello {{ 1 + 1 }}{% endset %}[{{ s }}]", "{}", "[hello 2]"},
      {"block set with filters", "{% set s | upper | replace('L', 'l') %}hello{% endset %}{{ s }}",
       "{}", "HEllO"},
      {"block set into a namespace",
       "{% set ns = namespace() %}{% set ns.text %}a{{ 'b' }}{% endset %}{{ ns.text }}", "{}",
       "ab"},
      {"with block", "{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]", "{}", "3[]"},
      {"filter block", "{% filter upper %}abc {{ 'd' }}{% endfilter %}", "{}", "ABC D"},
  });
}
// Macros: parameters, defaults, recursion and the variables they can see.
TEST(JinjaSyntax, Macros) {
  expect_renders({
      {"defaults and keyword arguments",
       "{% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}{{ "
       "greet('Bob') }} {{ greet('Al', greeting='Hi') }} {{ greet(greeting='Yo', name='Z') }}",
       "{}", "Hello, Bob! Hi, Al! Yo, Z!"},
      {"missing arguments are undefined",
       "{% macro m(a, b) %}[{{ a }}|{{ b }}|{{ b is defined }}]{% endmacro %}{{ m(1) }}", "{}",
       "[1||False]"},
      {"defaults can use earlier parameters",
       "{% macro m(a, b=a * 2) %}{{ a }}{{ b }}{% endmacro %}{{ m(3) }}", "{}", "36"},
      {"recursion",
       "{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(5) }}",
       "{}", "54321"},
      {"macros see template variables at call time",
       "{% macro m() %}{{ y }}{% endmacro %}{% set y = 5 %}{{ m() }}", "{}", "5"},
      {"macros do not see the caller loop variables",
       "{% macro m() %}[{{ i }}]{% endmacro %}{% for i in [1] %}{{ m() }}{% endfor %}", "{}", "[]"},
      {"macro result is a string",
       "{% macro m(x) %}{{ x }}{% endmacro %}{{ m('a') ~ m(1) }}{{ (m(2) + m(3))|length }}", "{}",
       "a12"},
      {"macro with whitespace control", R"J({%- macro item(x) -%}
  <{{ x }}>
{%- endmacro -%}
{{ item(1) }}{{ item(2) }})J",
       "{}", "<1><2>"},
      {"macro defined in a loop sees the iteration",
       "{% for v in ['a', 'b'] %}{% macro m() %}{{ v }}{% endmacro %}{{ m() }}{% endfor %}", "{}",
       "ab"},
      {"a macro passed around as a value",
       "{% macro m(x) %}<{{ x }}>{% endmacro %}{% set f = m %}{{ f(1) }}", "{}", "<1>"},
  });
}

}  // namespace
}  // namespace anvil::test
