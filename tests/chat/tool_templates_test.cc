// Chat templates with tool calling (Llama 3.1, Hermes-style, Mistral) rendered as transformers
// renders them.
// Expected strings are what Python's jinja2 3.1 renders in transformers' environment
// (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, transformers' tojson).
#include <gtest/gtest.h>

#include <string>

#include "chat/jinja_test_util.h"

namespace anvil::test {
namespace {

// Llama 3.1 with tools: whitespace control everywhere, tojson(indent=4), |items, reject, is
// iterable.
constexpr const char* kLlama31Tools = R"J({{- bos_token }}
{%- if custom_tools is defined %}
    {%- set tools = custom_tools %}
{%- endif %}
{%- if not tools_in_user_message is defined %}
    {%- set tools_in_user_message = true %}
{%- endif %}
{%- if not date_string is defined %}
    {%- set date_string = "26 Jul 2024" %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}

{#- This block extracts the system message, so we can slot it into the right place. #}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}

{#- System message + builtin tools #}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{%- if builtin_tools is defined or tools is not none %}
    {{- "Environment: ipython\n" }}
{%- endif %}
{%- if builtin_tools is defined %}
    {{- "Tools: " + builtin_tools | reject('equalto', 'code_interpreter') | join(", ") + "\n\n"}}
{%- endif %}
{{- "Cutting Knowledge Date: December 2023\n" }}
{{- "Today Date: " + date_string + "\n\n" }}
{%- if tools is not none and not tools_in_user_message %}
    {{- "You have access to the following functions. To call a function, please respond with JSON for a function call." }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
{%- endif %}
{{- system_message }}
{{- "<|eot_id|>" }}

{#- Custom tools are passed in a user message with some extra guidance #}
{%- if tools_in_user_message and not tools is none %}
    {#- Extract the first user message so we can plug it in here #}
    {%- if messages | length != 0 %}
        {%- set first_user_message = messages[0]['content']|trim %}
        {%- set messages = messages[1:] %}
    {%- else %}
        {{- raise_exception("Cannot put tools in the first user message when there's no first user message!") }}
{%- endif %}
    {{- '<|start_header_id|>user<|end_header_id|>\n\n' -}}
    {{- "Given the following functions, please respond with a JSON for a function call " }}
    {{- "with its proper arguments that best answers the given prompt.\n\n" }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
    {{- first_user_message + "<|eot_id|>"}}
{%- endif %}

{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- if not message.tool_calls|length == 1 %}
            {{- raise_exception("This model only supports single tool-calls at once!") }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {%- if builtin_tools is defined and tool_call.name in builtin_tools %}
            {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
            {{- "<|python_tag|>" + tool_call.name + ".call(" }}
            {%- for arg_name, arg_val in tool_call.arguments | items %}
                {{- arg_name + '="' + arg_val + '"' }}
                {%- if not loop.last %}
                    {{- ", " }}
                {%- endif %}
                {%- endfor %}
            {{- ")" }}
        {%- else  %}
            {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
            {{- '{"name": "' + tool_call.name + '", ' }}
            {{- '"parameters": ' }}
            {{- tool_call.arguments | tojson }}
            {{- "}" }}
        {%- endif %}
        {%- if builtin_tools is defined %}
            {#- This means we're in ipython mode #}
            {{- "<|eom_id|>" }}
        {%- else %}
            {{- "<|eot_id|>" }}
        {%- endif %}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\n\n" }}
        {%- if message.content is mapping or message.content is iterable %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
)J";

// Hermes-style tools: a recursive macro, dict literals, loop.previtem/nextitem, |items.
constexpr const char* kHermesTools = R"J({%- macro json_to_python_type(json_spec) %}
{%- set basic_type_map = {
    "string": "str",
    "number": "float",
    "integer": "int",
    "boolean": "bool"
} %}

{%- if basic_type_map[json_spec.type] is defined %}
    {{- basic_type_map[json_spec.type] }}
{%- elif json_spec.type == "array" %}
    {{- "list[" +  json_to_python_type(json_spec['items']) + "]"}}
{%- elif json_spec.type == "object" %}
    {%- if json_spec.additionalProperties is defined %}
        {{- "dict[str, " + json_to_python_type(json_spec.additionalProperties) + ']'}}
    {%- else %}
        {{- "dict" }}
    {%- endif %}
{%- elif json_spec.type is iterable %}
    {{- "Union[" }}
    {%- for t in json_spec.type %}
      {{- json_to_python_type({"type": t}) }}
      {%- if not loop.last %}
        {{- "," }}
    {%- endif %}
    {%- endfor %}
    {{- "]" }}
{%- else %}
    {{- "Any" }}
{%- endif %}
{%- endmacro %}

{{- bos_token }}
{{- '<|im_start|>system\nYou are a function calling AI model. Here are the available tools: <tools> ' }}
{%- for tool in tools %}
    {%- if tool.function is defined %}
        {%- set tool = tool.function %}
    {%- endif %}
    {{- '{"type": "function", "function": ' }}
    {{- '{"name": "' + tool.name + '", ' }}
    {{- '"description": "' + tool.name + '(' }}
    {%- for param_name, param_fields in tool.parameters.properties|items %}
        {{- param_name + ": " + json_to_python_type(param_fields) }}
        {%- if not loop.last %}
            {{- ", " }}
        {%- endif %}
    {%- endfor %}
    {{- ")" }}
    {%- if tool.return is defined %}
        {{- " -> " + json_to_python_type(tool.return) }}
    {%- endif %}
    {{- " - " + tool.description + "\n\n" }}
    {%- for param_name, param_fields in tool.parameters.properties|items %}
        {%- if loop.first %}
            {{- "    Args:\n" }}
        {%- endif %}
        {{- "        " + param_name + "(" + json_to_python_type(param_fields) + "): " + param_fields.description|trim }}
    {%- endfor %}
    {{- '", "parameters": ' }}
    {{- tool.parameters|tojson }}
    {{- "}" }}
    {%- if not loop.last %}
        {{- "\n" }}
    {%- endif %}
{%- endfor %}
{{- " </tools><|im_end|>\n" }}
{%- for message in messages %}
    {%- if message.role == "user" or message.role == "system" or (message.role == "assistant" and message.tool_calls is not defined) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
    {%- for tool_call in message.tool_calls %}
       {{- '\n<tool_call>\n' }}
           {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '{' }}
            {{- '"name": "' }}
            {{- tool_call.name }}
            {{- '"' }}
            {{- ', '}}
            {%- if tool_call.arguments is defined %}
                {{- '"arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments|tojson }}
                {%- endif %}
            {%- endif %}
            {{- '}' }}
            {{- '\n</tool_call>' }}
    {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.previtem and loop.previtem.role != "tool" %}
            {{- '<|im_start|>tool\n' }}
        {%- endif %}
        {{- '<tool_response>\n' }}
        {{- message.content }}
        {%- if not loop.last %}
            {{- '\n</tool_response>\n' }}
        {%- else %}
            {{- '\n</tool_response>' }}
        {%- endif %}
        {%- if not loop.last and loop.nextitem.role != "tool" %}
            {{- '<|im_end|>' }}
        {%- elif loop.last %}
            {{- '<|im_end|>' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
)J";

// Mistral with tools: selectattr|list, tool.items() with a loop filter, tojson slicing, ids.
constexpr const char* kMistralTools = R"J({%- if messages[0]["role"] == "system" %}
    {%- set system_message = messages[0]["content"] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}
{%- set user_messages = loop_messages | selectattr("role", "equalto", "user") | list %}

{#- This block checks for alternating user/assistant messages, skipping tool calling messages #}
{%- set ns = namespace() %}
{%- set ns.index = 0 %}
{%- for message in loop_messages %}
    {%- if not (message.role == "tool" or message.role == "tool_results" or (message.tool_calls is defined and message.tool_calls is not none)) %}
        {%- if (message["role"] == "user") != (ns.index % 2 == 0) %}
            {{- raise_exception("After the optional system message, conversation roles must alternate user/assistant/user/assistant/...") }}
        {%- endif %}
        {%- set ns.index = ns.index + 1 %}
    {%- endif %}
{%- endfor %}

{{- bos_token }}
{%- for message in loop_messages %}
    {%- if message["role"] == "user" %}
        {%- if tools is not none and (message == user_messages[-1]) %}
            {{- "[AVAILABLE_TOOLS] [" }}
            {%- for tool in tools %}
                {%- set tool = tool.function %}
                {{- '{"type": "function", "function": {' }}
                {%- for key, val in tool.items() if key != "return" %}
                    {%- if val is string %}
                        {{- '"' + key + '": "' + val + '"' }}
                    {%- else %}
                        {{- '"' + key + '": ' + val|tojson }}
                    {%- endif %}
                    {%- if not loop.last %}
                        {{- ", " }}
                    {%- endif %}
                {%- endfor %}
                {{- "}}" }}
                {%- if not loop.last %}
                    {{- ", " }}
                {%- else %}
                    {{- "]" }}
                {%- endif %}
            {%- endfor %}
            {{- "[/AVAILABLE_TOOLS]" }}
            {%- endif %}
        {%- if loop.last and system_message is defined %}
            {{- "[INST] " + system_message + "\n\n" + message["content"] + "[/INST]" }}
        {%- else %}
            {{- "[INST] " + message["content"] + "[/INST]" }}
        {%- endif %}
    {%- elif message.tool_calls is defined and message.tool_calls is not none %}
        {{- "[TOOL_CALLS] [" }}
        {%- for tool_call in message.tool_calls %}
            {%- set out = tool_call.function|tojson %}
            {{- out[:-1] }}
            {%- if not tool_call.id is defined or tool_call.id|length != 9 %}
                {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
            {%- endif %}
            {{- ', "id": "' + tool_call.id + '"}' }}
            {%- if not loop.last %}
                {{- ", " }}
            {%- else %}
                {{- "]" + eos_token }}
            {%- endif %}
        {%- endfor %}
    {%- elif message["role"] == "assistant" %}
        {{- " " + message["content"]|trim + eos_token}}
    {%- elif message["role"] == "tool_results" or message["role"] == "tool" %}
        {%- if message.content is defined and message.content.content is defined %}
            {%- set content = message.content.content %}
        {%- else %}
            {%- set content = message.content %}
        {%- endif %}
        {{- '[TOOL_RESULTS] {"content": ' + content|string + ", " }}
        {%- if not message.tool_call_id is defined or message.tool_call_id|length != 9 %}
            {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
        {%- endif %}
        {{- '"call_id": "' + message.tool_call_id + '"}[/TOOL_RESULTS]' }}
    {%- else %}
        {{- raise_exception("Only user and assistant roles are supported, with the exception of an initial optional system message!") }}
    {%- endif %}
{%- endfor %}
)J";

TEST(ChatTemplateModels, Llama31Tools) {
  expect_model(
      kLlama31Tools,
      {
          {"no tools",
           R"J({"messages": [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "  Hello there!  "}, {"role": "assistant", "content": "Hi! How can I help? 😊"}, {"role": "user", "content": "Écris un poème."}], "bos_token": "<|begin_of_text|>", "add_generation_prompt": true})J",
           R"J(<|begin_of_text|><|start_header_id|>system<|end_header_id|>

Cutting Knowledge Date: December 2023
Today Date: 26 Jul 2024

You are a helpful assistant.<|eot_id|><|start_header_id|>user<|end_header_id|>

Hello there!<|eot_id|><|start_header_id|>assistant<|end_header_id|>

Hi! How can I help? 😊<|eot_id|><|start_header_id|>user<|end_header_id|>

Écris un poème.<|eot_id|><|start_header_id|>assistant<|end_header_id|>

)J"},
          {"tools in the first user message, tool calls and results",
           R"J({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Zürich?"}, {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich", "unit": "celsius"}}}]}, {"role": "tool", "content": "{\"temp\": 21.5, \"sky\": \"clear\"}"}, {"role": "tool", "content": "second"}, {"role": "assistant", "content": "It is 21.5 °C and clear."}, {"role": "user", "content": "Thanks"}], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city name, e.g. Zürich"}, "unit": {"type": ["string", "null"], "enum": ["celsius", "fahrenheit"], "description": " Temperature unit "}, "days": {"type": "array", "items": {"type": "integer"}, "description": "Forecast days"}, "extra": {"type": "object", "additionalProperties": {"type": "number"}, "description": "Extra"}}, "required": ["city"]}, "return": {"type": "object"}}}], "bos_token": "<|begin_of_text|>", "add_generation_prompt": true})J",
           R"J(<|begin_of_text|><|start_header_id|>system<|end_header_id|>

Environment: ipython
Cutting Knowledge Date: December 2023
Today Date: 26 Jul 2024

Be brief.<|eot_id|><|start_header_id|>user<|end_header_id|>

Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.

Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.Do not use variables.

{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {
                    "type": "string",
                    "description": "The city name, e.g. Zürich"
                },
                "unit": {
                    "type": [
                        "string",
                        "null"
                    ],
                    "enum": [
                        "celsius",
                        "fahrenheit"
                    ],
                    "description": " Temperature unit "
                },
                "days": {
                    "type": "array",
                    "items": {
                        "type": "integer"
                    },
                    "description": "Forecast days"
                },
                "extra": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "number"
                    },
                    "description": "Extra"
                }
            },
            "required": [
                "city"
            ]
        },
        "return": {
            "type": "object"
        }
    }
}

Weather in Zürich?<|eot_id|><|start_header_id|>assistant<|end_header_id|>

{"name": "get_weather", "parameters": {"city": "Zürich", "unit": "celsius"}}<|eot_id|><|start_header_id|>ipython<|end_header_id|>

"{\"temp\": 21.5, \"sky\": \"clear\"}"<|eot_id|><|start_header_id|>ipython<|end_header_id|>

"second"<|eot_id|><|start_header_id|>assistant<|end_header_id|>

It is 21.5 °C and clear.<|eot_id|><|start_header_id|>user<|end_header_id|>

Thanks<|eot_id|><|start_header_id|>assistant<|end_header_id|>

)J"},
          {"tools in the system message",
           R"J({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Zürich?"}, {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich", "unit": "celsius"}}}]}, {"role": "tool", "content": "{\"temp\": 21.5, \"sky\": \"clear\"}"}, {"role": "tool", "content": "second"}, {"role": "assistant", "content": "It is 21.5 °C and clear."}, {"role": "user", "content": "Thanks"}], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city name, e.g. Zürich"}, "unit": {"type": ["string", "null"], "enum": ["celsius", "fahrenheit"], "description": " Temperature unit "}, "days": {"type": "array", "items": {"type": "integer"}, "description": "Forecast days"}, "extra": {"type": "object", "additionalProperties": {"type": "number"}, "description": "Extra"}}, "required": ["city"]}, "return": {"type": "object"}}}], "tools_in_user_message": false, "date_string": "01 Jan 2025", "bos_token": "<|begin_of_text|>", "add_generation_prompt": false})J",
           R"J(<|begin_of_text|><|start_header_id|>system<|end_header_id|>

Environment: ipython
Cutting Knowledge Date: December 2023
Today Date: 01 Jan 2025

You have access to the following functions. To call a function, please respond with JSON for a function call.Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.Do not use variables.

{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {
                    "type": "string",
                    "description": "The city name, e.g. Zürich"
                },
                "unit": {
                    "type": [
                        "string",
                        "null"
                    ],
                    "enum": [
                        "celsius",
                        "fahrenheit"
                    ],
                    "description": " Temperature unit "
                },
                "days": {
                    "type": "array",
                    "items": {
                        "type": "integer"
                    },
                    "description": "Forecast days"
                },
                "extra": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "number"
                    },
                    "description": "Extra"
                }
            },
            "required": [
                "city"
            ]
        },
        "return": {
            "type": "object"
        }
    }
}

Be brief.<|eot_id|><|start_header_id|>user<|end_header_id|>

Weather in Zürich?<|eot_id|><|start_header_id|>assistant<|end_header_id|>

{"name": "get_weather", "parameters": {"city": "Zürich", "unit": "celsius"}}<|eot_id|><|start_header_id|>ipython<|end_header_id|>

"{\"temp\": 21.5, \"sky\": \"clear\"}"<|eot_id|><|start_header_id|>ipython<|end_header_id|>

"second"<|eot_id|><|start_header_id|>assistant<|end_header_id|>

It is 21.5 °C and clear.<|eot_id|><|start_header_id|>user<|end_header_id|>

Thanks<|eot_id|>)J"},
          {"builtin tool call",
           R"J({"messages": [{"role": "user", "content": "Search"}, {"role": "assistant", "tool_calls": [{"function": {"name": "brave_search", "arguments": {"query": "x", "n": "3"}}}]}], "builtin_tools": ["brave_search", "code_interpreter", "wolfram_alpha"], "bos_token": "<|begin_of_text|>"})J",
           R"J(<|begin_of_text|><|start_header_id|>system<|end_header_id|>

Environment: ipython
Tools: brave_search, wolfram_alpha

Cutting Knowledge Date: December 2023
Today Date: 26 Jul 2024

<|eot_id|><|start_header_id|>user<|end_header_id|>

Search<|eot_id|><|start_header_id|>assistant<|end_header_id|>

<|python_tag|>brave_search.call(query="x", n="3")<|eom_id|>)J"},
          {"two tool calls refused",
           R"J({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "tool_calls": [1, 2]}], "bos_token": ""})J",
           "This model only supports single tool-calls at once!", true},
      });
}

TEST(ChatTemplateModels, HermesTools) {
  expect_model(
      kHermesTools,
      {
          {"a nullable type recurses forever in this template (jinja2: RecursionError)",
           R"J({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Zürich?"}, {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich", "unit": "celsius"}}}]}, {"role": "tool", "content": "{\"temp\": 21.5, \"sky\": \"clear\"}"}, {"role": "tool", "content": "second"}, {"role": "assistant", "content": "It is 21.5 °C and clear."}, {"role": "user", "content": "Thanks"}], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city name, e.g. Zürich"}, "unit": {"type": ["string", "null"], "enum": ["celsius", "fahrenheit"], "description": " Temperature unit "}, "days": {"type": "array", "items": {"type": "integer"}, "description": "Forecast days"}, "extra": {"type": "object", "additionalProperties": {"type": "number"}, "description": "Extra"}}, "required": ["city"]}, "return": {"type": "object"}}}], "bos_token": "<s>", "add_generation_prompt": true})J",
           "macro 'json_to_python_type' nested too deeply", true},
          {"tools, calls and responses",
           R"J({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Zürich?"}, {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich", "unit": "celsius"}}}]}, {"role": "tool", "content": "{\"temp\": 21.5, \"sky\": \"clear\"}"}, {"role": "tool", "content": "second"}, {"role": "assistant", "content": "It is 21.5 °C and clear."}, {"role": "user", "content": "Thanks"}], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city name, e.g. Zürich"}, "unit": {"type": ["string", "integer"], "enum": ["celsius", "fahrenheit"], "description": " Temperature unit "}, "days": {"type": "array", "items": {"type": "integer"}, "description": "Forecast days"}, "extra": {"type": "object", "additionalProperties": {"type": "number"}, "description": "Extra"}}, "required": ["city"]}, "return": {"type": "object"}}}, {"type": "function", "function": {"name": "ping", "description": "Ping.", "parameters": {"type": "object", "properties": {}}}}], "bos_token": "<s>", "add_generation_prompt": true})J",
           R"J(<s><|im_start|>system
You are a function calling AI model. Here are the available tools: <tools> {"type": "function", "function": {"name": "get_weather", "description": "get_weather(city: str, unit: Union[str,int], days: list[int], extra: dict[str, float]) -> dict - Get the current weather in a city.

    Args:
        city(str): The city name, e.g. Zürich        unit(Union[str,int]): Temperature unit        days(list[int]): Forecast days        extra(dict[str, float]): Extra", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city name, e.g. Zürich"}, "unit": {"type": ["string", "integer"], "enum": ["celsius", "fahrenheit"], "description": " Temperature unit "}, "days": {"type": "array", "items": {"type": "integer"}, "description": "Forecast days"}, "extra": {"type": "object", "additionalProperties": {"type": "number"}, "description": "Extra"}}, "required": ["city"]}}
{"type": "function", "function": {"name": "ping", "description": "ping() - Ping.

", "parameters": {"type": "object", "properties": {}}} </tools><|im_end|>
<|im_start|>system
Be brief.<|im_end|>
<|im_start|>user
Weather in Zürich?<|im_end|>
<|im_start|>assistant
<tool_call>
{"name": "get_weather", "arguments": {"city": "Zürich", "unit": "celsius"}}
</tool_call><|im_end|>
<|im_start|>tool
<tool_response>
{"temp": 21.5, "sky": "clear"}
</tool_response>
<tool_response>
second
</tool_response>
<|im_end|><|im_start|>assistant
It is 21.5 °C and clear.<|im_end|>
<|im_start|>user
Thanks<|im_end|>
<|im_start|>assistant
)J"},
      });
}

TEST(ChatTemplateModels, MistralTools) {
  expect_model(
      kMistralTools,
      {
          {"tools, a call and its result",
           R"J({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "weather?"}, {"role": "assistant", "tool_calls": [{"id": "abcdefghi", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}, {"role": "tool", "tool_call_id": "abcdefghi", "content": {"temp": 20}}, {"role": "assistant", "content": " 20C "}, {"role": "user", "content": "thx"}], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city name, e.g. Zürich"}, "unit": {"type": ["string", "null"], "enum": ["celsius", "fahrenheit"], "description": " Temperature unit "}, "days": {"type": "array", "items": {"type": "integer"}, "description": "Forecast days"}, "extra": {"type": "object", "additionalProperties": {"type": "number"}, "description": "Extra"}}, "required": ["city"]}, "return": {"type": "object"}}}], "bos_token": "<s>", "eos_token": "</s>"})J",
           R"J(<s>[INST] weather?[/INST][TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abcdefghi"}]</s>[TOOL_RESULTS] {"content": {'temp': 20}, "call_id": "abcdefghi"}[/TOOL_RESULTS] 20C</s>[AVAILABLE_TOOLS] [{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city name, e.g. Zürich"}, "unit": {"type": ["string", "null"], "enum": ["celsius", "fahrenheit"], "description": " Temperature unit "}, "days": {"type": "array", "items": {"type": "integer"}, "description": "Forecast days"}, "extra": {"type": "object", "additionalProperties": {"type": "number"}, "description": "Extra"}}, "required": ["city"]}}}][/AVAILABLE_TOOLS][INST] S

thx[/INST])J"},
          {"tool call id of the wrong length",
           R"J({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "weather?"}, {"role": "assistant", "tool_calls": [{"id": "abcdefghi", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}, {"role": "tool", "tool_call_id": "short", "content": {"temp": 20}}], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city name, e.g. Zürich"}, "unit": {"type": ["string", "null"], "enum": ["celsius", "fahrenheit"], "description": " Temperature unit "}, "days": {"type": "array", "items": {"type": "integer"}, "description": "Forecast days"}, "extra": {"type": "object", "additionalProperties": {"type": "number"}, "description": "Extra"}}, "required": ["city"]}, "return": {"type": "object"}}}], "bos_token": "<s>", "eos_token": "</s>"})J",
           "Tool call IDs should be alphanumeric strings with length 9!", true},
          {"no tools",
           R"J({"messages": [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "  Hello there!  "}, {"role": "assistant", "content": "Hi! How can I help? 😊"}, {"role": "user", "content": "Écris un poème."}], "bos_token": "<s>", "eos_token": "</s>"})J",
           R"J(<s>[INST]   Hello there!  [/INST] Hi! How can I help? 😊</s>[INST] You are a helpful assistant.

Écris un poème.[/INST])J"},
      });
}

}  // namespace
}  // namespace anvil::test
