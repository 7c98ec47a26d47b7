// Jinja errors: every syntax or runtime error is an anvil::Error "chat template: line N: ...",
// where jinja2 raises too; malformed and hostile templates fail cleanly. Expected strings are what
// Python's jinja2 3.1 renders in transformers' environment (ImmutableSandboxedEnvironment,
// trim_blocks, lstrip_blocks, loopcontrols, transformers' tojson).
#include <gtest/gtest.h>

#include <string>

#include "chat/jinja_test_util.h"

namespace anvil::test {
namespace {

// Templates that do not parse fail at construction, naming the line.
TEST(JinjaErrors, SyntaxErrors) {
  expect_errors({
      {"unclosed if", "{% if x %}", "{}", 1,
       "Unexpected end of template. Jinja was looking for the following tags: 'elif' or 'else' or "
       "'endif'. The innermost block that needs to be closed is 'if'."},
      {"unclosed for names the last line", R"J(line1
{% for x in y %}
abc)J",
       "{}", 3, "Jinja was looking for the following tags: 'endfor' or 'else'"},
      {"stray endfor", "{% endfor %}", "{}", 1, "Encountered unknown tag 'endfor'."},
      {"mismatched end tag", R"J({% if x %}
{% endfor %})J",
       "{}", 2,
       "Encountered unknown tag 'endfor'. Jinja was looking for the following tags: 'elif' or "
       "'else' or 'endif'."},
      {"second else", "{% if true %}a{% else %}b{% else %}c{% endif %}", "{}", 1,
       "Encountered unknown tag 'else'."},
      {"unknown tag", R"J(a

{% foo %})J",
       "{}", 3, "Encountered unknown tag 'foo'."},
      {"unterminated string", "{{ 'abc }}", "{}", 1, "unexpected char '''"},
      {"unclosed expression", "{{ x", "{}", 1,
       "unexpected end of template, expected 'end of print statement'."},
      {"unclosed block tag", "{% set x = 1 %", "{}", 1, "Unexpected end of template."},
      {"empty expression", "{{ }}", "{}", 1,
       "Expected an expression, got 'end of print statement'"},
      {"empty if", "{% if %}{% endif %}", "{}", 1,
       "Expected an expression, got 'end of statement block'"},
      {"unclosed comment", R"J(a
{# unclosed comment)J",
       "{}", 2, "Missing end of comment tag"},
      {"unclosed raw", "{% raw %}abc", "{}", 1, "Missing end of raw directive"},
      {"unknown filter", R"J(
{{ x | nosuchfilter }})J",
       "{}", 2, "No filter named 'nosuchfilter'."},
      {"unknown test", "{{ x is nosuchtest }}", "{}", 1, "No test named 'nosuchtest'."},
      {"unknown filter inside a loop inside an if",
       "{% if true %}{% for a in [1] %}{{ a|nope }}{% endfor %}{% endif %}", "{}", 1,
       "No filter named 'nope'."},
      {"break outside a loop", "{% break %}", "{}", 1, "'break' outside loop"},
      {"continue in a macro inside a loop",
       "{% for x in y %}{% macro m() %}{% continue %}{% endmacro %}{% endfor %}", "{}", 1,
       "'continue' outside loop"},
      {"mismatched brackets", "{{ (1, 2 }}", "{}", 1, "unexpected '}', expected ')'"},
      {"mismatched brackets 2", "{{ [1, 2) }}", "{}", 1, "unexpected ')', expected ']'"},
      {"stray closing bracket", "}}{%}", "{}", 1, "unexpected '}'"},
      {"dangling operator", "{{ 1 + }}", "{}", 1, "unexpected 'end of print statement'"},
      {"two expressions", "{{ 1 2 }}", "{}", 1,
       "expected token 'end of print statement', got 'integer'"},
      {"bad character", "{{ 'a' ! 'b' }}", "{}", 1, "unexpected char '!'"},
      {"default before non-default parameter", "{% macro m(a=1, b) %}{% endmacro %}", "{}", 1,
       "non-default argument follows default argument"},
      {"set without target", "{% set %}", "{}", 1,
       "Expected an expression, got 'end of statement block'"},
      {"for without in", "{% for x %}", "{}", 1,
       "expected token 'in', got 'end of statement block'"},
      {"dict without colon", "{{ {'a' 1} }}", "{}", 1, "expected token ':', got 'integer'"},
      {"positional after keyword argument", "{{ x(1, y=2, 3) }}", "{}", 1,
       "invalid syntax for function call expression"},
      {"bad escape", R"J({{ "\x4" }})J", "{}", 1, R"J(truncated \xXX escape)J"},
      {"test without name", "{{ 'a' is not }}", "{}", 1,
       "expected token 'name', got 'end of print statement'"},
      {"error line inside a multi-line template", R"J(a
b
{% for m in ms %}
{{ m }
{% endfor %})J",
       "{}", 4, "unexpected '}'"},
      {"include is not available", "{% include 'x.html' %}", "{}", 1,
       "'include' tag is not supported"},
  });
}
// Errors while rendering name the line of the failing expression.
TEST(JinjaErrors, RuntimeErrors) {
  expect_errors({
      {"raise_exception", R"J({% for m in messages %}
{% if m.role not in ['user', 'assistant'] %}
{{ raise_exception('Unknown role: ' + m.role) }}
{% endif %}
{% endfor %})J",
       R"J({"messages": [{"role": "user"}, {"role": "robot"}]})J", 3, "Unknown role: robot"},
      {"attribute of undefined", "{{ x.y }}", "{}", 1, "'x' is undefined"},
      {"unknown filter reached inside an if", R"J({% if true %}
{{ x|nope }}{% endif %})J",
       "{}", 2, "No filter named 'nope' found."},
      {"unknown test reached inside an if", "{% if 1 is nope %}{% endif %}", "{}", 1,
       "No test named 'nope' found."},
      {"attribute of a missing attribute", R"J(

{{ a.b.c }})J",
       R"J({"a": {}})J", 3, "'dict object' has no attribute 'b'"},
      {"attribute of a missing element", "{{ xs[3].role }}", R"J({"xs": [1]})J", 1,
       "list object has no element 3"},
      {"error inside nested blocks names its line", R"J({% for x in [1] %}
{% if x %}
{{ x.y.z }}
{% endif %}
{% endfor %})J",
       "{}", 3, "'int object' has no attribute 'y'"},
      {"error inside a macro names the macro line", R"J({% macro m(x) %}
{{ x + 1 }}
{% endmacro %}
{{ m('a') }})J",
       "{}", 2, R"J(can only concatenate str (not "int") to str)J"},
      {"calling undefined", "{{ foo() }}", "{}", 1, "'foo' is undefined"},
      {"calling a string", "{{ 'a'() }}", "{}", 1, "'str' object is not callable"},
      {"adding int and str", "{{ 1 + 'a' }}", "{}", 1,
       "unsupported operand type(s) for +: 'int' and 'str'"},
      {"arithmetic on undefined", "{{ missing + 1 }}", "{}", 1, "'missing' is undefined"},
      {"division by zero", "{{ 1 / 0 }}", "{}", 1, "division by zero"},
      {"modulo by zero", "{{ 1 // 0 }}", "{}", 1, "integer division or modulo by zero"},
      {"ordering different types", "{{ 1 < 'a' }}", "{}", 1,
       "'<' not supported between instances of 'int' and 'str'"},
      {"in with a non-string needle", "{{ 1 in 'abc' }}", "{}", 1,
       "'in <string>' requires string as left operand, not int"},
      {"unary minus on a string", "{{ -'a' }}", "{}", 1, "bad operand type for unary -: 'str'"},
      {"iterating none", "{% for x in none %}{% endfor %}", "{}", 1,
       "'NoneType' object is not iterable"},
      {"iterating a number", "{% for x in 5 %}{% endfor %}", "{}", 1,
       "'int' object is not iterable"},
      {"unpacking too many", "{% for a, b in [[1,2,3]] %}{% endfor %}", "{}", 1,
       "too many values to unpack (expected 2)"},
      {"unpacking too few", "{% set a, b = [1] %}", "{}", 1,
       "not enough values to unpack (expected 2, got 1)"},
      {"setting an attribute of a non-namespace", "{% set x = 1 %}{% set x.y = 2 %}", "{}", 1,
       "cannot assign attribute on non-namespace object"},
      {"too many macro arguments", "{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", "{}", 1,
       "macro 'm' takes not more than 1 argument(s)"},
      {"unknown macro keyword", "{% macro m(a) %}{% endmacro %}{{ m(b=2) }}", "{}", 1,
       "macro 'm' takes no keyword argument 'b'"},
      {"mutating a list is refused", "{% set xs = [] %}{{ xs.append(1) }}", "{}", 1,
       "access to attribute 'append' of 'list' object is unsafe."},
      {"mutating a dict is refused", "{{ {'a': 1}.pop('a') }}", "{}", 1,
       "access to attribute 'pop' of 'dict' object is unsafe."},
      {"unknown string method", "{{ 'abc'.nosuch() }}", "{}", 1,
       "'str object' has no attribute 'nosuch'"},
      {"str.index not found", "{{ 'hello'.index('z') }}", "{}", 1, "substring not found"},
      {"join of non-strings", "{{ ', '.join([1, 2]) }}", "{}", 1,
       "sequence item 0: expected str instance, int found"},
      {"length of a number", "{{ 5|length }}", "{}", 1, "object of type 'int' has no len()"},
      {"length of a generator", "{{ [1,2]|select('odd')|length }}", "{}", 1,
       "object of type 'generator' has no len()"},
      {"tojson of undefined", "{{ missing|tojson }}", "{}", 1,
       "Object of type Undefined is not JSON serializable"},
      {"range too big", "{{ range(1000000)|length }}", "{}", 1,
       "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000)."},
      {"slicing a dict", "{{ d[1:] }}", R"J({"d": {"a": 1}})J", 1, "unhashable type: 'slice'"},
      {"slicing a number", "{{ n[1:] }}", R"J({"n": 5})J", 1, "'int' object is not subscriptable"},
      {"a list as a dict key", "{{ [1] in {'a': 1} }}", "{}", 1, "unhashable type: 'list'"},
      {"unique of lists", "{{ [[1], [1]]|unique|list }}", "{}", 1, "unhashable type: 'list'"},
      {"float overflow", "{{ 2.5 ** 1e20 }}", "{}", 1, "Numerical result out of range"},
      {"int of undefined", "{{ missing|int }}", "{}", 1, "'missing' is undefined"},
      {"indent of a number", "{{ 5|indent }}", "{}", 1,
       "unsupported operand type(s) for +=: 'int' and 'str'"},
      {"range arithmetic", "{{ range(3) * 2 }}", "{}", 1,
       "unsupported operand type(s) for *: 'range' and 'int'"},
      {"range is not JSON", "{{ range(3)|tojson }}", "{}", 1,
       "Object of type range is not JSON serializable"},
      {"items of a non-mapping", "{{ [1]|items|list }}", "{}", 1,
       "Can only get item pairs from a mapping."},
  });
}

}  // namespace
}  // namespace anvil::test
