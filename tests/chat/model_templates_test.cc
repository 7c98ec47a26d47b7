// Chat templates of popular model families (Llama 2/3, Mistral, Gemma, ChatML, Zephyr, Phi-3)
// rendered as transformers renders them.
// Expected strings are what Python's jinja2 3.1 renders in transformers' environment
// (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, transformers' tojson).
#include <gtest/gtest.h>

#include <string>

#include "chat/jinja_test_util.h"

namespace anvil::test {
namespace {

// Llama 3: bos_token, `set loop_messages = messages`, `message['content'] | trim` binding tighter
// than +.
constexpr const char* kLlama3 =
    R"J({% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>

'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>

' }}{% endif %}
)J";

// Mistral: [INST] turns; raise_exception when roles do not alternate.
constexpr const char* kMistral =
    R"J({{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}
)J";

// Llama 2: <<SYS>> folded into the first user turn, messages[1:], content.strip().
constexpr const char* kLlama2 =
    R"J({% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\n' + system_message + '\n<</SYS>>\n\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}
)J";

// ChatML.
constexpr const char* kChatml =
    R"J({% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}
)J";

// Gemma: assistant renamed model, no system role.
constexpr const char* kGemma =
    R"J({{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}
)J";

// Zephyr: one tag per line, relying on trim_blocks and lstrip_blocks.
constexpr const char* kZephyr = R"J({% for message in messages %}
{% if message['role'] == 'user' %}
{{ '<|user|>
' + message['content'] + eos_token }}
{% elif message['role'] == 'system' %}
{{ '<|system|>
' + message['content'] + eos_token }}
{% elif message['role'] == 'assistant' %}
{{ '<|assistant|>
'  + message['content'] + eos_token }}
{% endif %}
{% if loop.last and add_generation_prompt %}
{{ '<|assistant|>' }}
{% endif %}
{% endfor %}
)J";

// Phi-3.
constexpr const char* kPhi3 =
    R"J({% for message in messages %}{% if message['role'] == 'system' %}{{'<|system|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'user' %}{{'<|user|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'assistant' %}{{'<|assistant|>\n' + message['content'] + '<|end|>\n'}}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif %}
)J";

TEST(ChatTemplateModels, Llama3) {
  expect_model(
      kLlama3,
      {
          {"system and generation prompt",
           R"J({"messages": [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "  Hello there!  "}, {"role": "assistant", "content": "Hi! How can I help? 😊"}, {"role": "user", "content": "Écris un poème."}], "bos_token": "<|begin_of_text|>", "add_generation_prompt": true})J",
           R"J(<|begin_of_text|><|start_header_id|>system<|end_header_id|>

You are a helpful assistant.<|eot_id|><|start_header_id|>user<|end_header_id|>

Hello there!<|eot_id|><|start_header_id|>assistant<|end_header_id|>

Hi! How can I help? 😊<|eot_id|><|start_header_id|>user<|end_header_id|>

Écris un poème.<|eot_id|><|start_header_id|>assistant<|end_header_id|>

)J"},
          {"conversation without generation prompt",
           R"J({"messages": [{"role": "user", "content": "  Hello there!  "}, {"role": "assistant", "content": "Hi! How can I help? 😊"}, {"role": "user", "content": "Écris un poème."}], "bos_token": "<|begin_of_text|>", "add_generation_prompt": false})J",
           R"J(<|begin_of_text|><|start_header_id|>user<|end_header_id|>

Hello there!<|eot_id|><|start_header_id|>assistant<|end_header_id|>

Hi! How can I help? 😊<|eot_id|><|start_header_id|>user<|end_header_id|>

Écris un poème.<|eot_id|>)J"},
      });
}

TEST(ChatTemplateModels, MistralInst) {
  expect_model(
      kMistral,
      {
          {"alternating turns",
           R"J({"messages": [{"role": "user", "content": "  Hello there!  "}, {"role": "assistant", "content": "Hi! How can I help? 😊"}, {"role": "user", "content": "Écris un poème."}], "bos_token": "<s>", "eos_token": "</s>"})J",
           "<s>[INST]   Hello there!   [/INST]Hi! How can I help? 😊</s>[INST] Écris un poème. "
           "[/INST]"},
          {"two user turns in a row",
           R"J({"messages": [{"role": "user", "content": "  Hello there!  "}, {"role": "user", "content": "  Hello there!  "}], "bos_token": "<s>", "eos_token": "</s>"})J",
           "Conversation roles must alternate user/assistant/user/assistant/...", true},
          {"system role refused",
           R"J({"messages": [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "  Hello there!  "}, {"role": "assistant", "content": "Hi! How can I help? 😊"}, {"role": "user", "content": "Écris un poème."}], "bos_token": "<s>", "eos_token": "</s>"})J",
           "Conversation roles must alternate user/assistant/user/assistant/...", true},
      });
}

TEST(ChatTemplateModels, Llama2) {
  expect_model(
      kLlama2,
      {
          {"system folded into the first turn",
           R"J({"messages": [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "  Hello there!  "}, {"role": "assistant", "content": "Hi! How can I help? 😊"}, {"role": "user", "content": "Écris un poème."}], "bos_token": "<s>", "eos_token": "</s>"})J",
           R"J(<s>[INST] <<SYS>>
You are a helpful assistant.
<</SYS>>

  Hello there! [/INST] Hi! How can I help? 😊 </s><s>[INST] Écris un poème. [/INST])J"},
          {"no system",
           R"J({"messages": [{"role": "user", "content": "  Hello there!  "}, {"role": "assistant", "content": "Hi! How can I help? 😊"}, {"role": "user", "content": "Écris un poème."}], "bos_token": "<s>", "eos_token": "</s>"})J",
           "<s>[INST] Hello there! [/INST] Hi! How can I help? 😊 </s><s>[INST] Écris un poème. "
           "[/INST]"},
          {"assistant first",
           R"J({"messages": [{"role": "assistant", "content": "Hi! How can I help? 😊"}], "bos_token": "<s>", "eos_token": "</s>"})J",
           "Conversation roles must alternate user/assistant/user/assistant/...", true},
      });
}

TEST(ChatTemplateModels, ChatML) {
  expect_model(
      kChatml,
      {
          {"system and generation prompt",
           R"J({"messages": [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "  Hello there!  "}, {"role": "assistant", "content": "Hi! How can I help? 😊"}, {"role": "user", "content": "Écris un poème."}], "add_generation_prompt": true})J",
           R"J(<|im_start|>system
You are a helpful assistant.<|im_end|>
<|im_start|>user
  Hello there!  <|im_end|>
<|im_start|>assistant
Hi! How can I help? 😊<|im_end|>
<|im_start|>user
Écris un poème.<|im_end|>
<|im_start|>assistant
)J"},
          {"no generation prompt",
           R"J({"messages": [{"role": "user", "content": "  Hello there!  "}, {"role": "assistant", "content": "Hi! How can I help? 😊"}, {"role": "user", "content": "Écris un poème."}], "add_generation_prompt": false})J",
           R"J(<|im_start|>user
  Hello there!  <|im_end|>
<|im_start|>assistant
Hi! How can I help? 😊<|im_end|>
<|im_start|>user
Écris un poème.<|im_end|>
)J"},
      });
}

TEST(ChatTemplateModels, Gemma) {
  expect_model(
      kGemma,
      {
          {"generation prompt",
           R"J({"messages": [{"role": "user", "content": "  Hello there!  "}, {"role": "assistant", "content": "Hi! How can I help? 😊"}, {"role": "user", "content": "Écris un poème."}], "bos_token": "<bos>", "add_generation_prompt": true})J",
           R"J(<bos><start_of_turn>user
Hello there!<end_of_turn>
<start_of_turn>model
Hi! How can I help? 😊<end_of_turn>
<start_of_turn>user
Écris un poème.<end_of_turn>
<start_of_turn>model
)J"},
          {"system role refused",
           R"J({"messages": [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "  Hello there!  "}, {"role": "assistant", "content": "Hi! How can I help? 😊"}, {"role": "user", "content": "Écris un poème."}], "bos_token": "<bos>", "add_generation_prompt": true})J",
           "System role not supported", true},
      });
}

TEST(ChatTemplateModels, Zephyr) {
  expect_model(
      kZephyr,
      {
          {"system and generation prompt",
           R"J({"messages": [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "  Hello there!  "}, {"role": "assistant", "content": "Hi! How can I help? 😊"}, {"role": "user", "content": "Écris un poème."}], "eos_token": "</s>", "add_generation_prompt": true})J",
           R"J(<|system|>
You are a helpful assistant.</s>
<|user|>
  Hello there!  </s>
<|assistant|>
Hi! How can I help? 😊</s>
<|user|>
Écris un poème.</s>
<|assistant|>
)J"},
          {"no generation prompt",
           R"J({"messages": [{"role": "user", "content": "  Hello there!  "}, {"role": "assistant", "content": "Hi! How can I help? 😊"}, {"role": "user", "content": "Écris un poème."}], "eos_token": "</s>", "add_generation_prompt": false})J",
           R"J(<|user|>
  Hello there!  </s>
<|assistant|>
Hi! How can I help? 😊</s>
<|user|>
Écris un poème.</s>
)J"},
      });
}

TEST(ChatTemplateModels, Phi3) {
  expect_model(
      kPhi3,
      {
          {"eos at the end",
           R"J({"messages": [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "  Hello there!  "}, {"role": "assistant", "content": "Hi! How can I help? 😊"}, {"role": "user", "content": "Écris un poème."}], "eos_token": "<|endoftext|>", "add_generation_prompt": false})J",
           R"J(<|system|>
You are a helpful assistant.<|end|>
<|user|>
  Hello there!  <|end|>
<|assistant|>
Hi! How can I help? 😊<|end|>
<|user|>
Écris un poème.<|end|>
<|endoftext|>)J"},
      });
}

}  // namespace
}  // namespace anvil::test
