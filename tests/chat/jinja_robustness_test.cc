// The chat template engine on hostile or unusual input: malformed templates never crash or hang,
// nesting and recursion are bounded with clear errors, compiled templates are reusable and
// thread-safe, and bytes that are not UTF-8 pass through unchanged.
#include <chrono>
#include <ctime>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "chat/jinja_test_util.h"
#include "expect_error.h"

namespace anvil::test {
namespace {

using json = nlohmann::ordered_json;

// Expects `fn` to throw a chat template error whose message contains `fragment`.
template <typename Fn>
void expect_template_error(Fn fn, const std::string& fragment) {
  expect_error(fn, fragment, "chat template: ");
}

constexpr const char* kTemplate = R"J({%- set ns = namespace(n=0) %}
{%- for m in messages if m.role != 'system' %}
    {%- set ns.n = ns.n + 1 %}
    {{- '<|' ~ m.role ~ '|>' ~ m.content|trim ~ ('\n' if not loop.last) }}
{%- endfor %}
{%- if add_generation_prompt %}{{ '\n<|assistant|>' }}{% endif %}
{{- '\n' ~ ns.n ~ ' turns' -}})J";

TEST(ChatTemplateApi, CompilesOnceAndRendersManyTimes) {
  const ChatTemplate tmpl(kTemplate);
  json ctx = {{"messages", json::array({{{"role", "system"}, {"content", "s"}},
                                        {{"role", "user"}, {"content", " hi "}}})},
              {"add_generation_prompt", true}};
  EXPECT_EQ(tmpl.render(ctx), "<|user|>hi\n<|assistant|>\n1 turns");
  ctx["add_generation_prompt"] = false;
  EXPECT_EQ(tmpl.render(ctx), "<|user|>hi\n1 turns");
  const ChatTemplate copy = tmpl;  // copies share the compiled template
  EXPECT_EQ(copy.render(ctx), "<|user|>hi\n1 turns");
}

TEST(ChatTemplateApi, RendersConcurrently) {
  const ChatTemplate tmpl(kTemplate);
  std::vector<std::thread> threads;
  std::vector<std::string> results(8);
  for (size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&, t] {
      json msgs = json::array();
      for (size_t i = 0; i <= t; ++i)
        msgs.push_back({{"role", "user"}, {"content", std::to_string(i)}});
      for (int rep = 0; rep < 50; ++rep)
        results[t] = tmpl.render({{"messages", msgs}, {"add_generation_prompt", false}});
    });
  }
  for (auto& th : threads) th.join();
  for (size_t t = 0; t < results.size(); ++t)
    EXPECT_EQ(results[t].substr(results[t].size() - 7), std::to_string(t + 1) + " turns");
}

TEST(ChatTemplateApi, ContextMustBeAnObject) {
  expect_template_error([] { ChatTemplate("x").render(json::array()); }, "must be a JSON object");
}

TEST(ChatTemplateApi, StrftimeNowUsesTheLocalClock) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  const std::string year = std::to_string(tm.tm_year + 1900);
  const std::string out =
      render("{{ strftime_now('%Y') }}|{{ strftime_now('%d %B %Y')|length > 8 }}");
  // The year can only differ if the test runs across midnight on New Year's Eve.
  EXPECT_TRUE(out == year + "|True" || out == std::to_string(tm.tm_year + 1901) + "|True") << out;
}

TEST(ChatTemplateApi, BytesThatAreNotUtf8PassThrough) {
  const json ctx = {{"s", std::string("a\xff\xfe"
                                      "b")}};
  const ChatTemplate tmpl("{{ s }}|{{ s|length }}|{{ s|upper }}|{{ s[::-1] }}");
  EXPECT_EQ(tmpl.render(ctx), std::string("a\xff\xfe"
                                          "b|4|A\xff\xfe"
                                          "B|b\xfe\xff"
                                          "a"));
}

// transformers registers a {% generation %} tag (AssistantTracker) that renders its body; the body
// is a call block, so assignments inside it stay inside.
TEST(ChatTemplateApi, GenerationBlocksRenderTheirBody) {
  const json ctx = {{"messages", json::array({{{"role", "user"}, {"content", "hi"}},
                                              {{"role", "assistant"}, {"content", "hello"}}})}};
  EXPECT_EQ(ChatTemplate("{% for m in messages %}{% if m.role == 'assistant' %}{% generation %}"
                         "{{ m.content }}{% endgeneration %}{% else %}{{ m.content }}{% endif %}|"
                         "{% endfor %}")
                .render(ctx),
            "hi|hello|");
  EXPECT_EQ(
      render("{% set x = 1 %}{% generation %}{% set x = 2 %}{{ x }}{% endgeneration %}{{ x }}"),
      "21");
  expect_template_error([] { render("{% generation %}unclosed"); }, "'endgeneration'");
}

TEST(JinjaRobustness, NestingIsBounded) {
  // Parentheses, lists and blocks nested far beyond any real template fail cleanly.
  expect_template_error(
      [] { render("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}"); },
      "nested too deeply");
  expect_template_error(
      [] { render("{{ " + std::string(5000, '[') + std::string(5000, ']') + " }}"); },
      "nested too deeply");
  std::string ifs;
  for (int i = 0; i < 1000; ++i) ifs += "{% if true %}";
  expect_template_error([&] { render(ifs); }, "nested too deeply");
  std::string chain = "{{ 1";
  for (int i = 0; i < 5000; ++i) chain += " + 1";
  expect_template_error([&] { render(chain + " }}"); }, "nested too deeply");
  std::string nots = "{{ ";
  for (int i = 0; i < 5000; ++i) nots += "not ";
  expect_template_error([&] { render(nots + "1 }}"); }, "nested too deeply");
  // A few hundred levels are fine.
  EXPECT_EQ(render("{{ " + std::string(40, '(') + "1" + std::string(40, ')') + " }}"), "1");
}

TEST(JinjaRobustness, RecursionIsBounded) {
  expect_template_error([] { render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"); },
                        "macro 'f' nested too deeply");
  expect_template_error(
      [] {
        render(
            "{% macro a() %}{{ b() }}{% endmacro %}{% macro b() %}{{ a() }}"
            "{% endmacro %}{{ a() }}");
      },
      "nested too deeply");
  EXPECT_EQ(render("{% macro f(n) %}{% if n %}{{ f(n - 1) }}{% else %}done{% endif %}{% endmacro %}"
                   "{{ f(50) }}"),
            "done");
}

TEST(JinjaRobustness, DeepContextsAndSelfReferencesFailCleanly) {
  json deep = json::array();
  for (int i = 0; i < 2000; ++i) deep = json::array({deep});
  expect_template_error(
      [&] {
        ChatTemplate("{{ x|length }}").render({{"x", deep}});
      },
      "nested too deeply");
  // A namespace that contains itself cannot be printed or serialized, but does not crash or leak.
  expect_template_error([] { render("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}"); },
                        "nested too deeply");
  expect_template_error(
      [] { render("{% set ns = namespace() %}{% set ns.l = [ns] %}{{ ns.l|tojson }}"); },
      "not JSON serializable");
  // Lists built in a loop cannot grow deeper than the limit either.
  expect_template_error(
      [] {
        render(
            "{% set ns = namespace(l=[]) %}{% for i in range(2000) %}{% set ns.l = [ns.l] %}"
            "{% endfor %}");
      },
      "nested too deeply");
  EXPECT_EQ(render("{% set ns = namespace(l=[]) %}{% for i in range(50) %}{% set ns.l = [ns.l] %}"
                   "{% endfor %}{{ ns.l|tojson|length }}"),
            "102");
}

TEST(JinjaRobustness, ResourceLimits) {
  expect_template_error([] { render("{{ 'x' * 100000000000 }}"); }, "too long");
  expect_template_error([] { render("{{ range(200000)|length }}"); }, "Range too big");
  expect_template_error([] { render("{{ 2 ** 64 }}"); }, "integer overflow");
  expect_template_error([] { render("{{ 99999999999999999999 }}"); }, "integer literal too large");
  // Strings and lists that double in a loop, and filters that multiply a string, stop at the
  // 256 MiB a template may build instead of exhausting memory.
  const std::string doubling = "{% set ns = namespace(s='a', l=[1]) %}{% for i in range(40) %}";
  expect_template_error([&] { render(doubling + "{% set ns.s = ns.s ~ ns.s %}{% endfor %}"); },
                        "a string built by ~ would pass 256 MiB");
  expect_template_error([&] { render(doubling + "{% set ns.s = ns.s + ns.s %}{% endfor %}"); },
                        "a string built by + would pass 256 MiB");
  expect_template_error([&] { render(doubling + "{% set ns.l = ns.l + ns.l %}{% endfor %}"); },
                        "a list built by + longer than");
  const std::string big = "{% set s = 'a' * 100000000 %}";
  expect_template_error([&] { render(big + "{{ s|replace('a', 'bcd') }}"); },
                        "replace's result would pass");
  expect_template_error([&] { render(big + "{{ [s, s, s]|join('') }}"); },
                        "join's result would pass");
  expect_template_error([&] { render(big + "{% for i in range(3) %}{{ s }}{% endfor %}"); },
                        "the rendered text would pass");
  EXPECT_EQ(render(big + "{{ (s ~ s)|length }}"), "200000000");
  // The largest range the sandbox allows still renders quickly.
  EXPECT_EQ(render("{% set ns = namespace(s=0) %}{% for i in range(100000) %}"
                   "{% set ns.s = ns.s + i %}{% endfor %}{{ ns.s }}"),
            "4999950000");
}

// Every prefix of a real template, and many random corruptions of it, either renders or throws
// anvil::Error: never a crash, a hang or another exception type.
TEST(JinjaRobustness, TruncatedAndCorruptedTemplatesNeverCrash) {
  const std::string source = kTemplate;
  const json ctx = {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})},
                    {"add_generation_prompt", true}};
  auto attempt = [&](const std::string& tmpl) {
    try {
      ChatTemplate(tmpl).render(ctx);
    } catch (const Error&) {
    }
  };
  for (size_t n = 0; n <= source.size(); ++n) attempt(source.substr(0, n));
  std::mt19937 rng(1234);
  const std::string alphabet = "{}%#-+()[]'\"|.,:~=!<>*/ \nabcxyz019_\\";
  for (int i = 0; i < 3000; ++i) {
    std::string s = source;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t pos = rng() % s.size();
      switch (rng() % 3) {
        case 0:
          s[pos] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          s.erase(pos, 1 + rng() % 3);
          break;
        default:
          s.insert(pos, 1, alphabet[rng() % alphabet.size()]);
      }
      if (s.empty()) s = "x";
    }
    attempt(s);
  }
  // Random byte soup too.
  for (int i = 0; i < 2000; ++i) {
    std::string s(1 + rng() % 40, ' ');
    for (char& c : s) c = alphabet[rng() % alphabet.size()];
    attempt(s);
  }
}

}  // namespace
}  // namespace anvil::test
