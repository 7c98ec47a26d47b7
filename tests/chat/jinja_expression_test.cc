// Jinja expressions: literals, operators and their precedence, comparisons, boolean logic,
// attribute and item access, slicing, Python repr of printed values, and undefined values. Expected
// strings are what Python's jinja2 3.1 renders in transformers' environment
// (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, transformers' tojson).
#include <gtest/gtest.h>

#include "chat/jinja_test_util.h"

namespace anvil::test {
namespace {

// Literal values and how they print.
TEST(JinjaExpressions, Literals) {
  expect_renders({
      {"strings with escapes",
       R"J({{ 'it\'s' }}|{{ "say \"hi\"" }}|{{ 'a\tb\\c' }}|{{ '\x41\u00e9\U0001F600' }}|{{ 'unknown \d escape' }})J",
       "{}", R"J(it's|say "hi"|a	b\c|Aé😀|unknown \d escape)J"},
      {"adjacent strings concatenate", R"J({{ 'a' 'b' "c" }})J", "{}", "abc"},
      {"multi-line string", R"J({{ 'a
b' }})J",
       "{}",
       R"J(a
b)J"},
      {"numbers",
       "{{ 42 }} {{ 0x1F }} {{ 0b101 }} {{ 0o17 }} {{ 1_000 }} {{ 1.5e3 }} {{ 2E-3 }} {{ 1.0 }} {{ "
       "0.5 }}",
       "{}", "42 31 5 15 1000 1500.0 0.002 1.0 0.5"},
      {"constants", "{{ true }} {{ True }} {{ false }} {{ False }} {{ none }} {{ None }}", "{}",
       "True True False False None None"},
      {"lists tuples dicts",
       "{{ [1, 'a', [2]] }} {{ (1,) }} {{ (1, 2) }} {{ () }} {{ {'k': 'v', 1: none} }} {{ [1, 2,] "
       "}} {{ {} }}",
       "{}", "[1, 'a', [2]] (1,) (1, 2) () {'k': 'v', 1: None} [1, 2] {}"},
      {"a bare tuple prints as a tuple", "{{ 1, 'a' }}", "{}", "(1, 'a')"},
      {"duplicate dict keys keep the last value", "{{ {'a': 1, 'b': 2, 'a': 3} }}", "{}",
       "{'a': 3, 'b': 2}"},
  });
}
// Python arithmetic: int stays int, / gives float, // and % floor.
TEST(JinjaExpressions, Arithmetic) {
  expect_renders({
      {"precedence",
       "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 * 3 ** 2 }} {{ 10 - 2 - 3 }} {{ 2 ** 3 ** 2 }} {{ "
       "-2 ** 2 }}",
       "{}", "7 9 18 5 64 4"},
      {"division", "{{ 7 / 2 }} {{ 4 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7.5 // 2 }} {{ 1 / 3 }}",
       "{}", "3.5 2.0 3 -4 3.0 0.3333333333333333"},
      {"modulo takes the sign of the divisor",
       "{{ 7 % 3 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ -7.5 % 2 }} {{ 5.5 % 2 }}", "{}",
       "1 2 -2 0.5 1.5"},
      {"powers", "{{ 2 ** 10 }} {{ 2 ** -1 }} {{ 2.0 ** 3 }} {{ 9 ** 0.5 }}", "{}",
       "1024 0.5 8.0 3.0"},
      {"int and float mix", "{{ 1 + 1.5 }} {{ 3 * 1.0 }} {{ 10 - 0.5 }} {{ 0.1 + 0.2 }}", "{}",
       "2.5 3.0 9.5 0.30000000000000004"},
      {"booleans are ints", "{{ true + true }} {{ true * 3 }} {{ false - 1 }}", "{}", "2 3 -1"},
      {"unary minus and plus", "{{ -x }} {{ -(3) }} {{ +3 }} {{ - 2.5 }} {{ -x|abs }}",
       R"J({"x": 5})J", "-5 -3 3 -2.5 5"},
      {"string and list operators",
       "{{ 'a' + 'b' }} {{ [1] + [2] }} {{ 'ab' * 3 }} {{ [0] * 3 }} {{ 3 * 'x' }} {{ (1,) + (2,) "
       "}}",
       "{}", "ab [1, 2] ababab [0, 0, 0] xxx (1, 2)"},
      {"tilde concatenates anything", "{{ 'a' ~ 1 ~ none ~ true ~ 1.5 ~ [1] ~ missing }}", "{}",
       "a1NoneTrue1.5[1]"},
      {"filters bind tighter than operators",
       "{{ 'ab' ~ 'cd'|upper }} {{ 1 + [1, 2]|length }} {{ -3|abs }}", "{}", "abCD 3 3"},
      {"percent formats strings",
       "{{ '%s has %d items' % ('cart', 3) }} {{ '%.2f' % 3.14159 }} {{ '%s' % 'one' }} [{{ '%s' % "
       "missing }}] {{ 'no fields' % [1] }}",
       "{}", "cart has 3 items 3.14 one [] no fields"},
  });
}
// Comparisons and membership tests.
TEST(JinjaExpressions, Comparisons) {
  expect_renders({
      {"equality across types",
       "{{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' == 'a' }} {{ [1,2] == [1,2] }} {{ {'a':1,'b':2} == "
       "{'b':2,'a':1} }} {{ (1,2) == [1,2] }} {{ none == none }} {{ 1 == '1' }}",
       "{}", "True True True True True False True False"},
      {"ordering",
       "{{ 1 < 2 }} {{ 'a' < 'b' }} {{ 'B' < 'a' }} {{ [1,2] < [1,3] }} {{ 1 <= 1 }} {{ 2 >= 3 }} "
       "{{ 1 != 2 }} {{ 2.5 > 2 }}",
       "{}", "True True True True True False True True"},
      {"chained comparisons", "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 1 == 1 != 2 }}", "{}",
       "True False True"},
      {"membership",
       "{{ 'a' in 'abc' }} {{ 'z' not in 'abc' }} {{ 1 in [1,2] }} {{ 'k' in {'k': 1} }} {{ 3 not "
       "in [1] }} {{ 'x' in missing }} {{ 'bc' in 'abcd' }}",
       "{}", "True True True True True False True"},
      {"undefined equals only undefined",
       "{{ missing == none }} {{ missing == other_missing }} {{ missing != 1 }}", "{}",
       "False True True"},
  });
}
// Python truthiness, short-circuit and conditional expressions.
TEST(JinjaExpressions, BooleanLogic) {
  expect_renders({
      {"and/or return operands",
       "{{ 0 or 'x' }} {{ 1 and 'y' }} {{ '' and 'z' }} {{ none or none }} {{ [] or [1] }} {{ 'a' "
       "or 'b' }}",
       "{}", "x y  None [1] a"},
      {"not", "{{ not 0 }} {{ not [] }} {{ not 'a' }} {{ not missing }} {{ not not 1 }}", "{}",
       "True True False True True"},
      {"precedence of not, and, or",
       "{{ not true and false }} {{ true or true and false }} {{ not (true and false) }}", "{}",
       "False True True"},
      {"short circuit skips errors", "{{ false and missing.attr }}{{ true or missing.attr }}", "{}",
       "FalseTrue"},
      {"conditional expressions",
       "{{ 'yes' if 1 else 'no' }} {{ 'yes' if 0 else 'no' }} [{{ 'yes' if 0 }}] {{ 'a' if false "
       "else 'b' if true else 'c' }}",
       "{}", "yes no [] b"},
  });
}
// obj.attr and obj[key] as jinja2 resolves them.
TEST(JinjaExpressions, AttributesAndItems) {
  expect_renders({
      {"attribute falls back to the item",
       "{{ m.role }} {{ m['role'] }} {{ m.nested.k }} {{ m['nested']['k'] }}",
       R"J({"m": {"role": "user", "nested": {"k": 1}}})J", "user user 1 1"},
      {"missing keys are undefined", "[{{ m.nope }}] [{{ m['nope'] }}] {{ m.nope is defined }}",
       R"J({"m": {}})J", "[] [] False"},
      {"list indexing", "{{ xs[0] }} {{ xs[-1] }} [{{ xs[5] }}] {{ xs.1 }}",
       R"J({"xs": [10, 20, 30]})J", "10 30 [] 20"},
      {"string indexing counts code points", "{{ s[0] }}{{ s[1] }}{{ s[-1] }}",
       R"J({"s": "héllo"})J", "héo"},
      {"method names win over keys for attributes only", "{{ x['items'] }} {{ x.get('items') }}",
       R"J({"x": {"items": 3}})J", "3 3"},
      {"attributes of none are undefined", "[{{ none.x }}]", "{}", "[]"},
      {"integer keys", "{% set d = {1: 'one', 'x': 2} %}{{ d[1] }} {{ d[2] is defined }} {{ d.x }}",
       "{}", "one False 2"},
  });
}
// Python slices, including negative steps.
TEST(JinjaExpressions, Slicing) {
  expect_renders({
      {"list slices",
       "{{ xs[1:3] }} {{ xs[::-1] }} {{ xs[::2] }} {{ xs[-2:] }} {{ xs[:] }} {{ xs[4:1:-2] }} {{ "
       "xs[10:] }} {{ xs[:-10] }}",
       R"J({"xs": [1, 2, 3, 4, 5]})J",
       "[2, 3] [5, 4, 3, 2, 1] [1, 3, 5] [4, 5] [1, 2, 3, 4, 5] [5, 3] [] []"},
      {"string slices count code points", "{{ s[1:-1] }} {{ s[::-1] }} {{ s[:3] }} {{ s[-3:] }}",
       R"J({"s": "héllo wörld"})J", "éllo wörl dlröw olléh hél rld"},
      {"tuple slices stay tuples", "{{ (1, 2, 3)[1:] }}", "{}", "(2, 3)"},
      {"slices with expressions", "{{ xs[n:n + 2] }} {{ xs[:n] }}",
       R"J({"xs": [1, 2, 3, 4], "n": 1})J", "[2, 3] [1]"},
      {"slice of a slice", "{{ 'abcdef'[1:][::2] }}", "{}", "bdf"},
  });
}
// What {{ value }} prints: str() of strings, repr() inside containers.
TEST(JinjaExpressions, PythonRepr) {
  expect_renders({
      {"lists and nested structures", "{{ x }}",
       R"J({"x": [1, "a", null, true, false, 1.5, {"k": "it's"}, []]})J",
       R"J([1, 'a', None, True, False, 1.5, {'k': "it's"}, []])J"},
      {"string quoting",
       R"J({{ ['plain', "it's", 'say "hi"', 'both \' and "', 'back\\slash', 'tab\tnl\n', 'é', '\x01'] }})J",
       "{}",
       R"J(['plain', "it's", 'say "hi"', 'both \' and "', 'back\\slash', 'tab\tnl\n', 'é', '\x01'])J"},
      {"floats print like Python",
       "{{ [1.0, 0.1, 1e-5, 1e16, 1e15, 123456789.123, 1.5e300, -0.0, 2.5e-10, 100.0, 1e22, "
       "0.0001] }}",
       "{}",
       "[1.0, 0.1, 1e-05, 1e+16, 1000000000000000.0, 123456789.123, 1.5e+300, -0.0, 2.5e-10, "
       "100.0, 1e+22, 0.0001]"},
      {"float arithmetic results",
       "{{ 1 / 3 }} {{ 2 / 3 }} {{ 1e100 }} {{ 12345678901234567.0 }} {{ 3.0 * 1.1 }}", "{}",
       "0.3333333333333333 0.6666666666666666 1e+100 1.2345678901234568e+16 3.3000000000000003"},
      {"floats from JSON", "{{ a }} {{ b }} {{ c }}", R"J({"a": 1.5, "b": 2.0, "c": 1e-07})J",
       "1.5 2.0 1e-07"},
      {"dicts keep insertion order", "{{ d }}",
       R"J({"d": {"z": 1, "a": {"b": [1, 2]}, "m": null}})J",
       "{'z': 1, 'a': {'b': [1, 2]}, 'm': None}"},
      {"None and booleans", "{{ none }} {{ true }} {{ false }} {{ x }} {{ y }}",
       R"J({"x": null, "y": false})J", "None True False None False"},
      {"dict views", "{{ d.items() }} {{ d.keys() }} {{ d.values() }}", R"J({"d": {"a": 1}})J",
       "dict_items([('a', 1)]) dict_keys(['a']) dict_values([1])"},
      {"ranges",
       "{{ range(3) }} {{ range(1, 10, 2) }} {{ range(5)[1:] }} {{ range(4)[::-1] }} {{ "
       "range(3)[1] }} {{ range(3) == range(3) }} {{ range(0)|list }}",
       "{}", "range(0, 3) range(1, 10, 2) range(1, 5) range(3, -1, -1) 1 True []"},
  });
}
// Undefined values: silent when printed or tested, errors when used.
TEST(JinjaExpressions, Undefined) {
  expect_renders({
      {"prints as empty", "[{{ missing }}]", "{}", "[]"},
      {"is falsy and has length 0",
       "{{ missing is defined }} {{ missing is undefined }} {{ missing|length }} {% if not missing "
       "%}falsy{% endif %}",
       "{}", "False True 0 falsy"},
      {"iterates as empty", "{% for x in missing %}x{% endfor %}{{ missing|list }}", "{}", "[]"},
      {"default filter",
       "{{ missing|default('d') }} {{ none|default('d') }} {{ ''|default('d', true) }} {{ 0|d('z', "
       "boolean=true) }} {{ 'v'|default('d') }}",
       "{}", "d None d z v"},
      {"missing attribute of a dict is undefined",
       "[{{ m.a }}] {{ m.a is defined }} {{ m.a|default('x') }}", R"J({"m": {}})J", "[] False x"},
      {"missing element of a list is undefined", "[{{ xs[3] }}] {{ xs[3] is defined }}",
       R"J({"xs": [1]})J", "[] False"},
      {"string filters see an empty string",
       "[{{ missing|upper }}][{{ missing|trim }}][{{ missing|string }}][{{ missing|join(',') }}]",
       "{}", "[][][][]"},
      {"first of an empty list is undefined", "[{{ []|first }}] {{ []|first is defined }}", "{}",
       "[] False"},
      {"if without else gives undefined", "[{{ 'x' if false }}] {{ ('x' if false) is defined }}",
       "{}", "[] False"},
      {"parameters not passed are undefined",
       "{% macro m(a) %}{{ a is defined }}{% endmacro %}{{ m() }}", "{}", "False"},
      {"in undefined is false", "{{ 1 in missing }}", "{}", "False"},
  });
}

}  // namespace
}  // namespace anvil::test
