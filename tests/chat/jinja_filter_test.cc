// Jinja filters, tests and the Python str/dict/list methods templates call, including transformers'
// tojson (json.dumps with ensure_ascii=False and Python's separators).
// Expected strings are what Python's jinja2 3.1 renders in transformers' environment
// (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, transformers' tojson).
#include <gtest/gtest.h>

#include "chat/jinja_test_util.h"

namespace anvil::test {
namespace {

// tojson is json.dumps: ", " and ": " separators, unicode kept, keys in insertion order.
TEST(JinjaFilters, Tojson) {
  expect_renders({
      {"nested object keeps key order and unicode", "{{ tool|tojson }}",
       R"J({"tool": {"type": "function", "function": {"name": "get_weather", "description": "Météo à Zürich — 天气", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}, "strict": null, "scale": 1.5}}})J",
       R"J({"type": "function", "function": {"name": "get_weather", "description": "Météo à Zürich — 天气", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}, "strict": null, "scale": 1.5}})J"},
      {"indent", "{{ tool|tojson(indent=2) }}",
       R"J({"tool": {"type": "function", "function": {"name": "get_weather", "description": "Météo à Zürich — 天气", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}, "strict": null, "scale": 1.5}}})J",
       R"J({
  "type": "function",
  "function": {
    "name": "get_weather",
    "description": "Météo à Zürich — 天气",
    "parameters": {
      "type": "object",
      "properties": {
        "city": {
          "type": "string"
        },
        "days": {
          "type": "integer",
          "minimum": 1
        }
      },
      "required": [
        "city"
      ]
    },
    "strict": null,
    "scale": 1.5
  }
})J"},
      {"indent 4 on a list", "{{ [1, [], {}, {'a': [2, 3]}]|tojson(indent=4) }}", "{}",
       R"J([
    1,
    [],
    {},
    {
        "a": [
            2,
            3
        ]
    }
])J"},
      {"indent given as a string", R"J({{ {'a': [1]}|tojson(indent='\t') }})J", "{}",
       R"J({
	"a": [
		1
	]
})J"},
      {"compact separators", "{{ {'b': 1, 'a': [1, 2]}|tojson(separators=(',', ':')) }}", "{}",
       R"J({"b":1,"a":[1,2]})J"},
      {"separators with indent",
       "{{ {'b': 1, 'a': [1, 2]}|tojson(indent=1, separators=(', ', ' = ')) }}", "{}",
       R"J({
 "b" = 1, 
 "a" = [
  1, 
  2
 ]
})J"},
      {"sort_keys", "{{ {'b': 1, 'a': {'d': 1, 'c': 2}}|tojson(sort_keys=true) }}", "{}",
       R"J({"a": {"c": 2, "d": 1}, "b": 1})J"},
      {"ensure_ascii", "{{ s|tojson(ensure_ascii=true) }}", "{\"s\": \"é€😀\177\"}",
       R"J("\u00e9\u20ac\ud83d\ude00\u007f")J"},
      {"escapes", "{{ s|tojson }}",
       R"J({"s": "quote\" back\\\\ nl\n tab\t cr\r \u0001 </script>&"})J",
       R"J("quote\" back\\\\ nl\n tab\t cr\r \u0001 </script>&")J"},
      {"scalars",
       "{{ 1|tojson }} {{ 1.0|tojson }} {{ 2.5e-8|tojson }} {{ none|tojson }} {{ true|tojson }} {{ "
       "'a'|tojson }} {{ (1, 'b')|tojson }}",
       "{}", R"J(1 1.0 2.5e-08 null true "a" [1, "b"])J"},
      {"non-string keys", "{{ {1: 2, none: 3, true: 4, 1.5: 5}|tojson }}", "{}",
       R"J({"1": 4, "null": 3, "1.5": 5})J"},
      {"empty containers", "{{ []|tojson }} {{ {}|tojson }} {{ []|tojson(indent=2) }}", "{}",
       "[] {} []"},
      {"arguments of a tool call", "{{ call.arguments|tojson }}",
       R"J({"call": {"arguments": {"query": "naïve", "n": 3, "f": 0.25, "tags": ["x", null]}}})J",
       R"J({"query": "naïve", "n": 3, "f": 0.25, "tags": ["x", null]})J"},
  });
}
// Filters on strings.
TEST(JinjaFilters, StringFilters) {
  expect_renders({
      {"trim", R"J([{{ '  ab  '|trim }}][{{ 'xxabxx'|trim('x') }}][{{ '
 a 	'|trim }}][{{ '　a '|trim }}])J",
       "{}", "[ab][ab][a][a]"},
      {"case", "{{ 'hello WORLD'|upper }} {{ 'Hello'|lower }} {{ 'hELLO wORLD'|capitalize }}", "{}",
       "HELLO WORLD hello Hello world"},
      {"title splits on dashes and brackets", R"J({{ "hello world-foo(bar) x[y] it's"|title }})J",
       "{}", "Hello World-Foo(Bar) X[Y] It's"},
      {"unicode case", "{{ 'straße ÀÉÎ ǆ'|upper }} {{ 'ÀÉÎ ΣΑΣ'|lower }} {{ 'élan vital'|title }}",
       "{}", "STRASSE ÀÉÎ Ǆ àéî σας Élan Vital"},
      {"replace",
       "{{ 'aaa'|replace('a', 'b') }} {{ 'aaa'|replace('a', 'b', 2) }} {{ 'abc'|replace('', '-') "
       "}}",
       "{}", "bbb bba -a-b-c-"},
      {"indent", R"J({{ 'a
b

c'|indent }}|{{ 'a
b'|indent(2, true) }}|{{ 'a

b'|indent(2, blank=true) }}|{{ 'x'|indent('>>', first=true) }})J",
       "{}",
       R"J(a
    b

    c|  a
  b|a
  
  b|>>x)J"},
      {"length counts code points", "{{ 'héllo'|length }} {{ '😀'|length }} {{ ''|length }}", "{}",
       "5 1 0"},
      {"wordcount", "{{ 'hello world, foo_bar 42!'|wordcount }} {{ ''|wordcount }}", "{}", "4 0"},
      {"escape",
       R"J({{ '<a href="x">&\'</a>'|e }} {{ '<b>'|escape }} {{ '<b>'|safe }} {{ 42|e }})J", "{}",
       "&lt;a href=&#34;x&#34;&gt;&amp;&#39;&lt;/a&gt; &lt;b&gt; <b> 42"},
      {"format",
       "{{ '%s-%d'|format('a', 3) }} {{ '%5.2f|%-4s|%03d'|format(3.14159, 'ab', 7) }} {{ "
       "'%(a)s'|format(a=1) }} {{ '%r'|format('x') }} {{ '%x %X %o %e %g %%'|format(255, 255, 8, "
       "12345.678, 0.0001) }}",
       "{}", "a-3  3.14|ab  |007 1 'x' ff FF 10 1.234568e+04 0.0001 %"},
      {"truncate",
       "{{ 'abcdefghij'|truncate(5) }} {{ 'hello world foo bar'|truncate(9) }} {{ 'hello world foo "
       "bar baz'|truncate(11, true) }} {{ 'hello world foo bar baz'|truncate(11, false, '!!', 0) "
       "}}",
       "{}", "abcdefghij hello... hello wo... hello!!"},
      {"center", "[{{ 'x'|center(5) }}]", "{}", "[  x  ]"},
      {"string", "{{ 1|string }} {{ none|string }} {{ [1, 'a']|string }} {{ ('x'|string)|length }}",
       "{}", "1 None [1, 'a'] 1"},
  });
}
// |safe and |escape give markupsafe.Markup: a str, except that + (either side) and % escape the
// plain strings they combine it with, as meetkai functionary-medium-v3.1's tool list relies on
// ("..."|safe + description + ...|safe + tool|tojson). Other operations keep or drop Markup the
// way markupsafe 3 does.
TEST(JinjaFilters, Markup) {
  expect_renders({
      {"functionary v3.1 tool line: |safe + str escapes the str",
       R"J({{ "Use the function '"|safe + t["name"] + "' to '"|safe + t["description"] + "'\n"|safe + t|tojson }})J",
       R"J({"t": {"name": "get_weather", "description": "Weather & <more>", "parameters": {"type": "object"}}})J",
       R"J(Use the function 'get_weather' to 'Weather &amp; &lt;more&gt;'
{&#34;name&#34;: &#34;get_weather&#34;, &#34;description&#34;: &#34;Weather &amp; &lt;more&gt;&#34;, &#34;parameters&#34;: {&#34;type&#34;: &#34;object&#34;}})J"},
      {"str + Markup escapes the str", R"J({{ x + '<i>'|safe }}|{{ '<'|safe + '>'|safe }})J",
       R"J({"x": "<b>"})J", R"J(&lt;b&gt;<i>|<>)J"},
      {"set keeps Markup across statements",
       R"J({% set m = '['|safe %}{% set m = m + x %}{{ m + ']' }})J", R"J({"x": "a&b"})J",
       R"J([a&amp;b])J"},
      {"~ and output do not escape",
       R"J({{ '<'|safe ~ x }}|{{ ['<'|safe]|join + '&' }}|{{ ('<'|safe)|replace('<', '<<') + '&' }})J",
       R"J({"x": "<b>"})J", R"J(<<b>|<&|<<&)J"},
      {"escape, forceescape and the escaped test",
       R"J({{ ('<b>'|safe)|e }} {{ ('<b>'|safe)|forceescape }} {{ '<b>'|e|e }} {{ '&'|e + '<' }} {{ ('x'|safe) is escaped }} {{ 'x' is escaped }} {{ 1|safe is escaped }})J",
       R"J({})J", R"J(<b> &lt;b&gt; &lt;b&gt; &amp;&lt; True False True)J"},
      {"safe of non-strings",
       R"J({{ (5|safe) + '<' }} {{ (none|safe) + '<' }} {{ (nope|safe) + '<' }})J", R"J({})J",
       R"J(5&lt; None&lt; &lt;)J"},
      {"* and % keep Markup and escape the arguments",
       R"J({{ ('<'|safe) * 2 + '&' }} {{ ('<%s|%d>'|safe) % (x, 3) }} {{ ('%(k)s'|safe) % {'k': '<'} }} {{ '<%s>'|safe|format('&') }})J",
       R"J({"x": "&"})J", R"J(<<&amp; <&amp;|3> &lt; <&amp;>)J"},
      {"filters and methods that keep Markup",
       R"J({{ ('<'|safe)|string + '&' }} {{ (' <'|safe)|trim + '&' }} {{ ('a'|safe)|upper + '&' }} {{ (' <'|safe).strip() + '&' }} {{ ('ab'|safe)[0] + '&' }} {{ ('ab'|safe)[0:1] + '&' }} {{ ('a<b'|safe).split('<')[1] + '&' }} {{ ('x'|safe).join(['<', '&']) }} {{ ('<'|safe).replace('<', 'x&') }})J",
       R"J({})J", R"J(<&amp; <&amp; A&amp; <&amp; a&amp; a&amp; b&amp; &lt;x&amp; x&amp;)J"},
      {"Markup is still a str",
       R"J({{ ('a'|safe) == 'a' }} {{ ('a'|safe) is string }} {{ ('ab'|safe)|length }} {{ ('<'|safe)|tojson }} {{ ['<'|safe] }})J",
       R"J({})J", R"J(True True 2 "<" [Markup('<')])J"},
  });
  expect_errors({
      {"Markup + int", "{{ ('a'|safe) + 1 }}", "{}", 1,
       "unsupported operand type(s) for +: 'Markup' and 'int'"},
      {"None + Markup", "{{ none + 'a'|safe }}", "{}", 1,
       "unsupported operand type(s) for +: 'NoneType' and 'Markup'"},
  });
}

// Filters on lists, dicts and generators.
TEST(JinjaFilters, SequenceFilters) {
  expect_renders({
      {"length and count",
       "{{ [3,1,2]|length }} {{ 'abc'|count }} {{ {'a':1}|length }} {{ (1, 2)|length }}", "{}",
       "3 3 1 2"},
      {"join",
       "{{ [1,2,3]|join(', ') }} {{ ['a','b']|join }} {{ [{'n':'x'},{'n':'y'}]|join('-', "
       "attribute='n') }} {{ [none, true, 1.0]|join('/') }}",
       "{}", "1, 2, 3 ab x-y None/True/1.0"},
      {"first and last", "{{ [1,2]|first }} {{ [1,2]|last }} {{ 'abc'|first }} {{ 'abc'|last }}",
       "{}", "1 2 a c"},
      {"list", "{{ 'abc'|list }} {{ {'a':1,'b':2}|list }} {{ (1,2)|list }} {{ range(3)|list }}",
       "{}", "['a', 'b', 'c'] ['a', 'b'] [1, 2] [0, 1, 2]"},
      {"sort",
       "{{ [3,1,2]|sort }} {{ [3,1,2]|sort(reverse=true) }} {{ ['b','A','c']|sort }} {{ "
       "['b','A','c']|sort(case_sensitive=true) }} {{ [{'a':2},{'a':1}]|sort(attribute='a') }}",
       "{}", "[1, 2, 3] [3, 2, 1] ['A', 'b', 'c'] ['A', 'b', 'c'] [{'a': 1}, {'a': 2}]"},
      {"sort by several attributes",
       "{{ [{'a':2,'b':1},{'a':1,'b':2},{'a':1,'b':1}]|sort(attribute='a,b') }}", "{}",
       "[{'a': 1, 'b': 1}, {'a': 1, 'b': 2}, {'a': 2, 'b': 1}]"},
      {"sort is stable",
       "{{ "
       "[{'k':1,'n':'x'},{'k':0,'n':'y'},{'k':1,'n':'z'}]|sort(attribute='k')|map(attribute='n')|"
       "join }} {{ [{'k':1,'n':'x'},{'k':0,'n':'y'},{'k':1,'n':'z'}]|sort(attribute='k', "
       "reverse=true)|map(attribute='n')|join }}",
       "{}", "yxz xzy"},
      {"unique",
       "{{ [1,2,1,3,2]|unique|list }} {{ ['a','A','b']|unique|list }} {{ "
       "['a','A','b']|unique(case_sensitive=true)|list }} {{ "
       "[{'r':'u'},{'r':'a'},{'r':'u'}]|unique(attribute='r')|list }}",
       "{}", "[1, 2, 3] ['a', 'b'] ['a', 'A', 'b'] [{'r': 'u'}, {'r': 'a'}]"},
      {"reverse", "{{ [1,2,3]|reverse|list }} {{ 'abc'|reverse }} {{ [1,2]|reverse|join(',') }}",
       "{}", "[3, 2, 1] cba 2,1"},
      {"items and dictsort",
       "{{ {'b':1,'a':2}|items|list }} {{ {'b':1,'A':2, 'c': 0}|dictsort }} {{ "
       "{'b':1,'a':2}|dictsort(by='value') }} {{ {'b':1,'a':2}|dictsort(reverse=true) }}",
       "{}",
       "[('b', 1), ('a', 2)] [('A', 2), ('b', 1), ('c', 0)] [('b', 1), ('a', 2)] [('b', 1), ('a', "
       "2)]"},
      {"map",
       "{{ [{'n':'a'},{'n':'b'}]|map(attribute='n')|list }} {{ ['a','b']|map('upper')|join }} {{ "
       "[1,2]|map('string')|list }} {{ [{'n':'a'},{}]|map(attribute='n', default='z')|list }} {{ "
       "['a b ', ' c']|map('trim')|list }}",
       "{}", "['a', 'b'] AB ['1', '2'] ['a', 'z'] ['a b', 'c']"},
      {"map with a dotted attribute path", "{{ ms|map(attribute='function.name')|join(', ') }}",
       R"J({"ms": [{"function": {"name": "f"}}, {"function": {"name": "g"}}]})J", "f, g"},
      {"select and reject",
       "{{ [1,2,3,4]|select('odd')|list }} {{ [1,2,3,4]|reject('odd')|list }} {{ "
       "[0,1,'',2]|select|list }} {{ [1,2,3]|select('gt', 1)|list }} {{ [1,2,3]|select('equalto', "
       "2)|list }} {{ ['a', 1]|select('string')|list }}",
       "{}", "[1, 3] [2, 4] [1, 2] [2, 3] [2] ['a']"},
      {"selectattr and rejectattr",
       "{{ ms|selectattr('role', 'equalto', 'user')|list }} {{ ms|rejectattr('role', 'eq', "
       "'user')|map(attribute='c')|list }} {{ ms|selectattr('c')|list|length }} {{ "
       "ms|selectattr('missing', 'undefined')|list|length }}",
       R"J({"ms": [{"role": "user", "c": 1}, {"role": "sys", "c": 0}]})J",
       "[{'role': 'user', 'c': 1}] [0] 1 2"},
      {"select on a false value is empty",
       "{{ 0|select|list }} {{ false|reject('odd')|list }} {{ none|map('upper')|list }}", "{}",
       "[] [] []"},
      {"generators are always true",
       "{% if [1]|select('odd') %}a{% endif %}{% if []|select('odd') %}b{% endif %}{% if "
       "[]|select('odd')|list %}c{% endif %}",
       "{}", "ab"},
      {"sum min max",
       "{{ [1,2,3]|sum }} {{ [{'v':1},{'v':2}]|sum(attribute='v') }} {{ [1,2]|sum(start=10) }} {{ "
       "[[1],[2]]|sum(start=[]) }} {{ [3,1,2]|min }} {{ [3,1,2]|max }} {{ ['b','A']|min }} {{ "
       "[{'a':3},{'a':5}]|max(attribute='a') }} [{{ []|max }}]",
       "{}", "6 3 13 [1, 2] 1 3 A {'a': 5} []"},
      {"batch", "{{ [1,2,3,4,5]|batch(2)|list }} {{ [1,2,3]|batch(2, 0)|list }}", "{}",
       "[[1, 2], [3, 4], [5]] [[1, 2], [3, 0]]"},
  });
}
// Filters on numbers.
TEST(JinjaFilters, NumberFilters) {
  expect_renders({
      {"int",
       "{{ '42'|int }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(5) }} {{ 3.9|int }} {{ -3.9|int }} "
       "{{ '0x1A'|int(0, 16) }} {{ ' 12 '|int }} {{ true|int }} {{ '1_000'|int }} {{ none|int }}",
       "{}", "42 4 0 5 3 -3 26 12 1 1000 0"},
      {"float",
       "{{ '4.5'|float }} {{ 'x'|float }} {{ 3|float }} {{ '1e3'|float }} {{ ' inf '|float }} {{ "
       "'-nan'|float }} {{ 'x'|float(1) }}",
       "{}", "4.5 0.0 3.0 1000.0 inf nan 1"},
      {"abs", "{{ (-3)|abs }} {{ -2.5|abs }} {{ 4|abs }}", "{}", "3 2.5 4"},
      {"round",
       "{{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ 3|round }} {{ 2.4|round(0, 'ceil') "
       "}} {{ 2.6|round(method='floor') }} {{ 1234.5|round(-2) }} {{ 15|round(-1) }} {{ "
       "0.125|round(2) }}",
       "{}", "2.0 4.0 2.67 3 3.0 2.0 1200.0 20 0.12"},
  });
}
// The built-in tests.
TEST(JinjaFilters, Tests) {
  expect_renders({
      {"defined and none",
       "{{ x is defined }} {{ y is defined }} {{ y is undefined }} {{ x is none }} {{ x is not "
       "none }} {{ z is none }}",
       R"J({"x": 1, "z": null})J", "True False True False True True"},
      {"types",
       "{{ 1 is number }} {{ true is number }} {{ 1 is integer }} {{ true is integer }} {{ 1.0 is "
       "float }} {{ 1 is float }} {{ 'a' is string }} {{ 1 is string }} {{ true is boolean }} {{ 1 "
       "is boolean }}",
       "{}", "True True True False True False True False True False"},
      {"containers",
       "{{ {} is mapping }} {{ [] is mapping }} {{ [] is iterable }} {{ 'a' is iterable }} {{ 1 is "
       "iterable }} {{ 'a' is sequence }} {{ [] is sequence }} {{ {} is sequence }} {{ 1 is "
       "sequence }}",
       "{}", "True False True True False True True True False"},
      {"true and false",
       "{{ true is true }} {{ 1 is true }} {{ false is false }} {{ 0 is false }} {{ none is false "
       "}}",
       "{}", "True False True False False"},
      {"numbers",
       "{{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(4) }}", "{}",
       "True True True False"},
      {"comparisons",
       "{{ 1 is eq 1 }} {{ 1 is equalto 2 }} {{ 2 is gt 1 }} {{ 2 is lt 1 }} {{ 2 is ge 2 }} {{ 2 "
       "is le 1 }} {{ 1 is ne 1 }} {{ 2 is greaterthan 1 }} {{ 2 is lessthan 1 }} {{ 1 is in [1,2] "
       "}} {{ 'x' is in 'abc' }}",
       "{}", "True False True False True False False True False True False"},
      {"case",
       "{{ 'ab' is lower }} {{ 'Ab' is lower }} {{ 'AB' is upper }} {{ '1A' is upper }} {{ '12' is "
       "upper }}",
       "{}", "True False True True False"},
      {"sameas and callable",
       "{{ none is sameas none }} {{ true is sameas true }} {{ 1 is sameas true }} {{ range is "
       "callable }} {{ 1 is callable }} {{ 'a'.upper is callable }}",
       "{}", "True True False True False True"},
      {"filter and test names",
       "{{ 'upper' is filter }} {{ 'nope' is filter }} {{ 'odd' is test }} {{ 'nope' is test }}",
       "{}", "True False True False"},
      {"tests in conditions",
       "{% if x is string and x is not none %}s{% endif %}{% if y is mapping %}m{% endif %}",
       R"J({"x": "a", "y": {"k": 1}})J", "sm"},
  });
}
// Python str methods.
TEST(JinjaFilters, StringMethods) {
  expect_renders({
      {"strip",
       R"J([{{ '  a b  '.strip() }}][{{ 'xxaxx'.strip('x') }}][{{ '  a'.lstrip() }}][{{ 'a  '.rstrip() }}][{{ '

ab
'.lstrip('
') }}][{{ 'abcba'.strip('ab') }}])J",
       "{}",
       R"J([a b][a][a][a][ab
][c])J"},
      {"split",
       "{{ 'a,b,,c'.split(',') }} {{ '  a  b c '.split() }} {{ 'a b c'.split(' ', 1) }} {{ "
       "''.split() }} {{ ''.split(',') }} {{ 'a<x>b<x>c'.split('<x>')[-1] }} {{ '  a b  c  "
       "'.split(none, 1) }}",
       "{}", "['a', 'b', '', 'c'] ['a', 'b', 'c'] ['a', 'b c'] [] [''] c ['a', 'b  c  ']"},
      {"rsplit",
       "{{ 'a b c'.rsplit(' ', 1) }} {{ '  a b  c  '.rsplit(none, 1) }} {{ 'a.b.c'.rsplit('.') }}",
       "{}", "['a b', 'c'] ['  a b', 'c'] ['a', 'b', 'c']"},
      {"splitlines",
       "{{ 'a\nb\r\nc'.splitlines() }} {{ 'a\nb\n'.splitlines(true) }} {{ ''.splitlines() }}", "{}",
       R"J(['a', 'b', 'c'] ['a\n', 'b\n'] [])J"},
      {"startswith and endswith",
       "{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith('bc') }} {{ 'abc'.startswith(('x','a')) }} "
       "{{ 'abc'.endswith(('x','y')) }} {{ 'abc'.startswith('b', 1) }} {{ 'abc'.endswith('') }}",
       "{}", "True True True False True True"},
      {"case methods",
       R"J({{ 'Hello World'.upper() }} {{ 'Hello'.lower() }} {{ 'hello world'.title() }} {{ "they're bill's 1st".title() }} {{ 'hELLO'.capitalize() }} {{ 'AbC'.swapcase() }})J",
       "{}", "HELLO WORLD hello Hello World They'Re Bill'S 1St Hello aBc"},
      {"replace",
       "{{ 'aaa'.replace('a','b') }} {{ 'aaa'.replace('a','b',1) }} {{ 'a-b-c'.replace('-', '') }}",
       "{}", "bbb baa abc"},
      {"find and index count code points",
       "{{ 'hello'.find('l') }} {{ 'hello'.rfind('l') }} {{ 'hello'.find('z') }} {{ "
       "'hello'.index('e') }} {{ 'héllo'.find('l') }} {{ 'hello'.find('l', 3) }} {{ "
       "'hello'.count('l') }}",
       "{}", "2 3 -1 1 2 3 2"},
      {"join", "{{ ', '.join(['a','b']) }} {{ ''.join('abc') }} {{ '-'.join(xs) }}",
       R"J({"xs": ["x", "y"]})J", "a, b abc x-y"},
      {"format",
       "{{ '{} and {}'.format('a', 'b') }} {{ '{0}{1}{0}'.format('x','y') }} {{ "
       "'{name}!'.format(name='n') }} {{ "
       "'{:>5}|{:<3}|{:^5}|{:.2f}|{:05d}|{:,}'.format('a','b','c',3.14159,42,1234567) }} {{ "
       "'{{}}{}'.format(1) }} {{ '{!r}'.format('s') }}",
       "{}", "a and b xyx n!     a|b  |  c  |3.14|00042|1,234,567 {}1 's'"},
      {"predicates",
       R"J({{ '123'.isdigit() }} {{ '12a'.isdigit() }} {{ 'abc'.isalpha() }} {{ 'héllo'.isalpha() }} {{ ' 	'.isspace() }} {{ ''.isspace() }} {{ 'ab1'.isalnum() }} {{ 'AB'.isupper() }} {{ 'ab'.islower() }})J",
       "{}", "True False True True True False True True True"},
      {"padding",
       "{{ 'a'.zfill(3) }} {{ '-5'.zfill(4) }} {{ 'ab'.center(6, '*') }} {{ 'ab'.ljust(4, '.') "
       "}}|{{ 'ab'.rjust(4) }}",
       "{}", "00a -005 **ab** ab..|  ab"},
      {"partition and removeprefix",
       "{{ 'a.b.c'.partition('.') }} {{ 'a.b.c'.rpartition('.') }} {{ "
       "'prefix_x'.removeprefix('prefix_') }} {{ 'x.txt'.removesuffix('.txt') }}",
       "{}", "('a', '.', 'b.c') ('a.b', '.', 'c') x x"},
      {"Qwen3 reasoning extraction",
       R"J({% set c = m.split('</think>')[-1].lstrip('\n') %}{% set r = m.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}[{{ r }}][{{ c }}])J",
       R"J({"m": "<think>\nstep 1\nstep 2\n</think>\n\nAnswer"})J",
       R"J([step 1
step 2][Answer])J"},
      {"methods on values from the context", "{{ m.content.strip().upper() }}",
       R"J({"m": {"content": "  hi  "}})J", "HI"},
  });
}
// dict and list methods that do not mutate.
TEST(JinjaFilters, DictAndListMethods) {
  expect_renders({
      {"dict get", "{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 5) }}",
       R"J({"d": {"a": 1, "b": 2}})J", "1 None 5"},
      {"dict views",
       "{{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }} {{ d.items()|length }}",
       R"J({"d": {"a": 1, "b": 2}})J", "['a', 'b'] [1, 2] [('a', 1), ('b', 2)] 2"},
      {"list index and count",
       "{{ [1,2,3,2].index(2) }} {{ [1,2,2].count(2) }} {{ (1,2).count(1) }}", "{}", "1 2 1"},
  });
}
// Global functions: range, dict, namespace, joiner, strftime_now.
TEST(JinjaFilters, Globals) {
  expect_renders({
      {"range",
       "{{ range(5)|list }} {{ range(2, 5)|list }} {{ range(10, 0, -3)|list }} {{ range(0)|list }} "
       "{{ range(3)|length }}",
       "{}", "[0, 1, 2, 3, 4] [2, 3, 4] [10, 7, 4, 1] [] 3"},
      {"dict", "{{ dict(a=1, b='x') }} {{ dict({'z': 1}, y=2) }} {{ dict([('k', 'v')]) }}", "{}",
       "{'a': 1, 'b': 'x'} {'z': 1, 'y': 2} {'k': 'v'}"},
      {"namespace", "{{ namespace(a=1).a }} {{ namespace({'b': 2}).b }}", "{}", "1 2"},
      {"joiner", "{% set j = joiner('|') %}{% for x in [1,2,3] %}{{ j() }}{{ x }}{% endfor %}",
       "{}", "1|2|3"},
      {"strftime_now literal text", "{{ strftime_now('100%% sure') }}", "{}", "100% sure"},
      {"context shadows globals", "{{ range }}", R"J({"range": "mine"})J", "mine"},
  });
}

}  // namespace
}  // namespace anvil::test
