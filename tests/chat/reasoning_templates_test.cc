// Chat templates with reasoning, tool calls and multimodal content (Qwen3, DeepSeek-R1, Gemma 3)
// rendered as transformers renders them.
// Expected strings are what Python's jinja2 3.1 renders in transformers' environment
// (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, transformers' tojson).
#include <gtest/gtest.h>

#include <string>

#include "chat/jinja_test_util.h"
#include "test_data.h"

namespace anvil::test {
namespace {

// DeepSeek-R1: namespace flags across loops, `in` on dicts, split('</think>'), full-width tokens.
constexpr const char* kDeepSeekR1 =
    R"J({% if not add_generation_prompt is defined %}{% set add_generation_prompt = false %}{% endif %}{% set ns = namespace(is_first=false, is_tool=false, is_output_first=true, system_prompt='', is_first_sp=true) %}{%- for message in messages %}{%- if message['role'] == 'system' %}{%- if ns.is_first_sp %}{% set ns.system_prompt = ns.system_prompt + message['content'] %}{% set ns.is_first_sp = false %}{%- else %}{% set ns.system_prompt = ns.system_prompt + '\n\n' + message['content'] %}{%- endif %}{%- endif %}{%- endfor %}{{ bos_token }}{{ ns.system_prompt }}{%- for message in messages %}{%- if message['role'] == 'user' %}{%- set ns.is_tool = false -%}{{'<｜User｜>' + message['content']}}{%- endif %}{%- if message['role'] == 'assistant' and 'tool_calls' in message %}{%- set ns.is_tool = false -%}{%- for tool in message['tool_calls'] %}{%- if not ns.is_first %}{%- if message['content'] is none %}{{'<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + tool['function']['name'] + '\n' + '```json' + '\n' + tool['function']['arguments'] + '\n' + '```' + '<｜tool▁call▁end｜>'}}{%- else %}{{'<｜Assistant｜>' + message['content'] + '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + tool['function']['name'] + '\n' + '```json' + '\n' + tool['function']['arguments'] + '\n' + '```' + '<｜tool▁call▁end｜>'}}{%- endif %}{%- set ns.is_first = true -%}{%- else %}{{'\n' + '<｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + tool['function']['name'] + '\n' + '```json' + '\n' + tool['function']['arguments'] + '\n' + '```' + '<｜tool▁call▁end｜>'}}{%- endif %}{%- endfor %}{{'<｜tool▁calls▁end｜><｜end▁of▁sentence｜>'}}{%- endif %}{%- if message['role'] == 'assistant' and 'tool_calls' not in message %}{%- if ns.is_tool %}{{'<｜tool▁outputs▁end｜>' + message['content'] + '<｜end▁of▁sentence｜>'}}{%- set ns.is_tool = false -%}{%- else %}{% set content = message['content'] %}{% if '</think>' in content %}{% set content = content.split('</think>')[-1] %}{% endif %}{{'<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>'}}{%- endif %}{%- endif %}{%- if message['role'] == 'tool' %}{%- set ns.is_tool = true -%}{%- if ns.is_output_first %}{{'<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>' + message['content'] + '<｜tool▁output▁end｜>'}}{%- set ns.is_output_first = false %}{%- else %}{{'<｜tool▁output▁begin｜>' + message['content'] + '<｜tool▁output▁end｜>'}}{%- endif %}{%- endif %}{%- endfor -%}{% if ns.is_tool %}{{'<｜tool▁outputs▁end｜>'}}{% endif %}{% if add_generation_prompt and not ns.is_tool %}{{'<｜Assistant｜><think>\n'}}{% endif %}
)J";

// Gemma 3: content given as a list of parts, `is string` / `is iterable`, first_user_prefix.
constexpr const char* kGemma3 = R"J({{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- if messages[0]['content'] is string -%}
        {%- set first_user_prefix = messages[0]['content'] + '

' -%}
    {%- else -%}
        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '

' -%}
    {%- endif -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '
' + (first_user_prefix if loop.first else "") }}
    {%- if message['content'] is string -%}
        {{ message['content'] | trim }}
    {%- elif message['content'] is iterable -%}
        {%- for item in message['content'] -%}
            {%- if item['type'] == 'image' -%}
                {{ '<start_of_image>' }}
            {%- elif item['type'] == 'text' -%}
                {{ item['text'] | trim }}
            {%- endif -%}
        {%- endfor -%}
    {%- else -%}
        {{ raise_exception("Invalid content type") }}
    {%- endif -%}
    {{ '<end_of_turn>
' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{'<start_of_turn>model
'}}
{%- endif -%}
)J";

// The Qwen3 template from tests/data/chat/qwen3_tokenizer_config.json.
std::string qwen3_template() {
  return nlohmann::ordered_json::parse(read_file(data_dir() + "/chat/qwen3_tokenizer_config.json"))
      .at("chat_template")
      .get<std::string>();
}

TEST(ChatTemplateModels, Qwen3Tools) {
  expect_model(
      qwen3_template(),
      {
          {"tools, calls and responses",
           R"J({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Zürich?"}, {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich", "unit": "celsius"}}}]}, {"role": "tool", "content": "{\"temp\": 21.5, \"sky\": \"clear\"}"}, {"role": "tool", "content": "second"}, {"role": "assistant", "content": "It is 21.5 °C and clear."}, {"role": "user", "content": "Thanks"}], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city name, e.g. Zürich"}, "unit": {"type": ["string", "null"], "enum": ["celsius", "fahrenheit"], "description": " Temperature unit "}, "days": {"type": "array", "items": {"type": "integer"}, "description": "Forecast days"}, "extra": {"type": "object", "additionalProperties": {"type": "number"}, "description": "Extra"}}, "required": ["city"]}, "return": {"type": "object"}}}], "add_generation_prompt": true})J",
           R"J(<|im_start|>system
Be brief.

# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city name, e.g. Zürich"}, "unit": {"type": ["string", "null"], "enum": ["celsius", "fahrenheit"], "description": " Temperature unit "}, "days": {"type": "array", "items": {"type": "integer"}, "description": "Forecast days"}, "extra": {"type": "object", "additionalProperties": {"type": "number"}, "description": "Extra"}}, "required": ["city"]}, "return": {"type": "object"}}}
</tools>

For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call><|im_end|>
<|im_start|>user
Weather in Zürich?<|im_end|>
<|im_start|>assistant
<tool_call>
{"name": "get_weather", "arguments": {"city": "Zürich", "unit": "celsius"}}
</tool_call><|im_end|>
<|im_start|>user
<tool_response>
{"temp": 21.5, "sky": "clear"}
</tool_response>
<tool_response>
second
</tool_response><|im_end|>
<|im_start|>assistant
It is 21.5 °C and clear.<|im_end|>
<|im_start|>user
Thanks<|im_end|>
<|im_start|>assistant
)J"},
          {"reasoning content and think blocks",
           R"J({"messages": [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "<think>\nSimple sum.\n</think>\n\n4"}, {"role": "user", "content": "And 3+3?"}, {"role": "assistant", "content": "6", "reasoning_content": "Add them."}], "add_generation_prompt": true, "enable_thinking": true})J",
           R"J(<|im_start|>user
What is 2+2?<|im_end|>
<|im_start|>assistant
4<|im_end|>
<|im_start|>user
And 3+3?<|im_end|>
<|im_start|>assistant
<think>
Add them.
</think>

6<|im_end|>
<|im_start|>assistant
)J"},
          {"tool-response-looking user message",
           R"J({"messages": [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "<think>\nSimple sum.\n</think>\n\n4"}, {"role": "user", "content": "And 3+3?"}, {"role": "assistant", "content": "6", "reasoning_content": "Add them."}, {"role": "user", "content": "<tool_response>x</tool_response>"}], "add_generation_prompt": false})J",
           R"J(<|im_start|>user
What is 2+2?<|im_end|>
<|im_start|>assistant
4<|im_end|>
<|im_start|>user
And 3+3?<|im_end|>
<|im_start|>assistant
<think>
Add them.
</think>

6<|im_end|>
<|im_start|>user
<tool_response>x</tool_response><|im_end|>
)J"},
          {"tools with thinking disabled",
           R"J({"messages": [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "  Hello there!  "}, {"role": "assistant", "content": "Hi! How can I help? 😊"}, {"role": "user", "content": "Écris un poème."}], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city name, e.g. Zürich"}, "unit": {"type": ["string", "null"], "enum": ["celsius", "fahrenheit"], "description": " Temperature unit "}, "days": {"type": "array", "items": {"type": "integer"}, "description": "Forecast days"}, "extra": {"type": "object", "additionalProperties": {"type": "number"}, "description": "Extra"}}, "required": ["city"]}, "return": {"type": "object"}}}, {"type": "function", "function": {"name": "noop", "description": "Does nothing", "parameters": {}}}], "add_generation_prompt": true, "enable_thinking": false})J",
           R"J(<|im_start|>system
You are a helpful assistant.

# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city name, e.g. Zürich"}, "unit": {"type": ["string", "null"], "enum": ["celsius", "fahrenheit"], "description": " Temperature unit "}, "days": {"type": "array", "items": {"type": "integer"}, "description": "Forecast days"}, "extra": {"type": "object", "additionalProperties": {"type": "number"}, "description": "Extra"}}, "required": ["city"]}, "return": {"type": "object"}}}
{"type": "function", "function": {"name": "noop", "description": "Does nothing", "parameters": {}}}
</tools>

For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call><|im_end|>
<|im_start|>user
  Hello there!  <|im_end|>
<|im_start|>assistant
Hi! How can I help? 😊<|im_end|>
<|im_start|>user
Écris un poème.<|im_end|>
<|im_start|>assistant
<think>

</think>

)J"},
          {"string and dict arguments, bare calls",
           R"J({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "call", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}, {"name": "g", "arguments": {"b": [1, 2, {"c": null}], "d": "é"}}]}, {"role": "tool", "content": "r1"}], "add_generation_prompt": true})J",
           R"J(<|im_start|>user
hi<|im_end|>
<|im_start|>assistant
call
<tool_call>
{"name": "f", "arguments": {"a": 1}}
</tool_call>
<tool_call>
{"name": "g", "arguments": {"b": [1, 2, {"c": null}], "d": "é"}}
</tool_call><|im_end|>
<|im_start|>user
<tool_response>
r1
</tool_response><|im_end|>
<|im_start|>assistant
)J"},
      });
}

TEST(ChatTemplateModels, DeepSeekR1) {
  expect_model(
      kDeepSeekR1,
      {
          {"system prompts, tool calls, tool outputs, think stripped",
           R"J({"messages": [{"role": "system", "content": "SYS1"}, {"role": "system", "content": "SYS2"}, {"role": "user", "content": "Q1"}, {"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}, {"type": "function", "function": {"name": "g", "arguments": "{}"}}]}, {"role": "tool", "content": "R1"}, {"role": "tool", "content": "R2"}, {"role": "assistant", "content": "done"}, {"role": "user", "content": "Q2"}, {"role": "assistant", "content": "<think>hmm</think>A2"}], "bos_token": "<｜begin▁of▁sentence｜>", "add_generation_prompt": true})J",
           R"J(<｜begin▁of▁sentence｜>SYS1

SYS2<｜User｜>Q1<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f
```json
{"a": 1}
```<｜tool▁call▁end｜>
<｜tool▁call▁begin｜>function<｜tool▁sep｜>g
```json
{}
```<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜><｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>R1<｜tool▁output▁end｜><｜tool▁output▁begin｜>R2<｜tool▁output▁end｜><｜tool▁outputs▁end｜>done<｜end▁of▁sentence｜><｜User｜>Q2<｜Assistant｜>A2<｜end▁of▁sentence｜><｜Assistant｜><think>
)J"},
          {"ends inside tool outputs",
           R"J({"messages": [{"role": "system", "content": "SYS1"}, {"role": "system", "content": "SYS2"}, {"role": "user", "content": "Q1"}, {"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}, {"type": "function", "function": {"name": "g", "arguments": "{}"}}]}, {"role": "tool", "content": "R1"}, {"role": "tool", "content": "R2"}], "bos_token": "<s>", "add_generation_prompt": true})J",
           R"J(<s>SYS1

SYS2<｜User｜>Q1<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f
```json
{"a": 1}
```<｜tool▁call▁end｜>
<｜tool▁call▁begin｜>function<｜tool▁sep｜>g
```json
{}
```<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜><｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>R1<｜tool▁output▁end｜><｜tool▁output▁begin｜>R2<｜tool▁output▁end｜><｜tool▁outputs▁end｜>)J"},
      });
}

TEST(ChatTemplateModels, Gemma3Multimodal) {
  expect_model(
      kGemma3,
      {
          {"content parts with an image",
           R"J({"messages": [{"role": "system", "content": [{"type": "text", "text": "Be nice."}]}, {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": " Describe. "}]}, {"role": "assistant", "content": "A cat."}, {"role": "user", "content": "More"}], "bos_token": "<bos>", "add_generation_prompt": true})J",
           R"J(<bos><start_of_turn>user
Be nice.

<start_of_image>Describe.<end_of_turn>
<start_of_turn>model
A cat.<end_of_turn>
<start_of_turn>user
More<end_of_turn>
<start_of_turn>model
)J"},
          {"plain strings",
           R"J({"messages": [{"role": "user", "content": "  Hello there!  "}, {"role": "assistant", "content": "Hi! How can I help? 😊"}, {"role": "user", "content": "Écris un poème."}], "bos_token": "<bos>", "add_generation_prompt": false})J",
           R"J(<bos><start_of_turn>user
Hello there!<end_of_turn>
<start_of_turn>model
Hi! How can I help? 😊<end_of_turn>
<start_of_turn>user
Écris un poème.<end_of_turn>
)J"},
          {"invalid content type",
           R"J({"messages": [{"role": "user", "content": 5}], "bos_token": "<bos>"})J",
           "Invalid content type", true},
      });
}

}  // namespace
}  // namespace anvil::test
