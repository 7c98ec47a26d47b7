// The Jinja parser (see jinja_parser.h): template structure, statements and the check for unknown
// filters and tests. Expressions are parsed in jinja_parser_expr.cc.
#include "chat/jinja_parser.h"

#include <algorithm>

#include "chat/jinja_builtins.h"
#include "chat/jinja_parser_impl.h"

namespace anvil::jinja {

namespace parser_detail {

namespace {

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) out += " or ";
    out += "'" + names[i] + "'";
  }
  return out;
}

}  // namespace

std::string describe(const Token& t) {
  switch (t.type) {
    case TokenType::kName:
    case TokenType::kOperator:
      return t.value;
    case TokenType::kData:
      return "template data / text";
    case TokenType::kVariableBegin:
      return "begin of print statement";
    case TokenType::kVariableEnd:
      return "end of print statement";
    case TokenType::kBlockBegin:
      return "begin of statement block";
    case TokenType::kBlockEnd:
      return "end of statement block";
    case TokenType::kString:
      return "string";
    case TokenType::kInteger:
      return "integer";
    case TokenType::kFloat:
      return "float";
    case TokenType::kEof:
      return "end of template";
  }
  return "token";
}

TemplateAst Parser::parse() {
  TemplateAst ast;
  ast.body = subparse({});
  check_names(ast.body, false);
  return ast;
}

void Parser::expect_type(TokenType type, const std::string& what) {
  if (cur().type != type) {
    if (cur().type == TokenType::kEof) fail("unexpected end of template, expected '" + what + "'.");
    fail("expected token '" + what + "', got '" + describe(cur()) + "'");
  }
  next();
}

void Parser::expect_op(std::string_view op) {
  if (!is_op(op)) {
    if (cur().type == TokenType::kEof) fail_eof({});
    fail("expected token '" + std::string(op) + "', got '" + describe(cur()) + "'");
  }
  next();
}

std::string Parser::expect_name() {
  if (cur().type != TokenType::kName) {
    if (cur().type == TokenType::kEof) fail_eof({});
    fail("expected token 'name', got '" + describe(cur()) + "'");
  }
  return next().value;
}

void Parser::fail_eof(const std::vector<std::string>& end_tags) const {
  std::string message = "Unexpected end of template.";
  const std::vector<std::string>* expected = &end_tags;
  if (expected->empty() && !end_stack_.empty()) expected = &end_stack_.back();
  if (!expected->empty())
    message += " Jinja was looking for the following tags: " + quoted_list(*expected) + ".";
  if (!tag_stack_.empty())
    message += " The innermost block that needs to be closed is '" + tag_stack_.back() + "'.";
  fail(message);
}

void Parser::fail_unknown_tag(const std::string& name, int line) const {
  std::string message = "Encountered unknown tag '" + name + "'.";
  if (!end_stack_.empty()) {
    message += " Jinja was looking for the following tags: " + quoted_list(end_stack_.back()) +
               ". The innermost block that needs to be closed is '" + tag_stack_.back() + "'.";
  }
  fail(message, line);
}

Body Parser::subparse(const std::vector<std::string>& end_tags) {
  if (++block_depth_ > kMaxBlockDepth) fail("blocks nested too deeply");
  if (!end_tags.empty()) end_stack_.push_back(end_tags);
  Body body;
  while (true) {
    const Token& tok = cur();
    if (tok.type == TokenType::kEof) {
      if (!end_tags.empty()) fail_eof(end_tags);
      break;
    }
    if (tok.type == TokenType::kData) {
      auto s = std::make_unique<Stmt>(StmtKind::kText, tok.line);
      s->text = tok.value;
      body.push_back(std::move(s));
      next();
    } else if (tok.type == TokenType::kVariableBegin) {
      next();
      auto s = std::make_unique<Stmt>(StmtKind::kOutput, cur().line);
      s->exprs.push_back(parse_tuple(false, true, {}, false));
      expect_type(TokenType::kVariableEnd, "end of print statement");
      body.push_back(std::move(s));
    } else if (tok.type == TokenType::kBlockBegin) {
      next();
      if (cur().type == TokenType::kName &&
          std::find(end_tags.begin(), end_tags.end(), cur().value) != end_tags.end())
        break;
      body.push_back(parse_statement());
      expect_type(TokenType::kBlockEnd, "end of statement block");
    } else {
      fail("unexpected '" + describe(tok) + "'");
    }
  }
  if (!end_tags.empty()) end_stack_.pop_back();
  --block_depth_;
  return body;
}

Body Parser::parse_statements(const std::vector<std::string>& end_tags, bool drop_end) {
  skip_op(":");
  expect_type(TokenType::kBlockEnd, "end of statement block");
  Body body = subparse(end_tags);
  if (cur().type == TokenType::kEof) fail_eof(end_tags);
  if (drop_end) next();
  return body;
}

StmtPtr Parser::parse_statement() {
  const Token& tok = cur();
  if (tok.type != TokenType::kName) fail("tag name expected");
  const std::string name = tok.value;
  const int line = tok.line;
  static const std::vector<std::string> kUnsupported = {
      "call", "block", "extends", "include", "import", "from", "autoescape", "recursive"};
  if (std::find(kUnsupported.begin(), kUnsupported.end(), name) != kUnsupported.end())
    fail("the '" + name + "' tag is not supported in chat templates");
  using Handler = StmtPtr (Parser::*)();
  static const std::pair<const char*, Handler> kHandlers[] = {
      {"for", &Parser::parse_for},
      {"if", &Parser::parse_if},
      {"set", &Parser::parse_set},
      {"macro", &Parser::parse_macro},
      {"with", &Parser::parse_with},
      {"filter", &Parser::parse_filter_block},
      {"generation", &Parser::parse_generation},
      {"break", &Parser::parse_loop_control},
      {"continue", &Parser::parse_loop_control},
  };
  for (const auto& [tag, handler] : kHandlers) {
    if (name == tag) {
      tag_stack_.push_back(name);
      StmtPtr s = (this->*handler)();
      tag_stack_.pop_back();
      return s;
    }
  }
  fail_unknown_tag(name, line);
}

std::vector<std::string> Parser::parse_target_names(bool* unpack) {
  std::vector<std::string> names;
  const bool paren = skip_op("(");
  *unpack = paren;
  while (true) {
    if (is_tuple_end({"in"})) fail("Expected an expression, got '" + describe(cur()) + "'");
    if (cur().type != TokenType::kName) fail("can't assign to '" + describe(cur()) + "'");
    const std::string n = next().value;
    if (n == "true" || n == "false" || n == "none" || n == "True" || n == "False" || n == "None")
      fail("can't assign to 'const'");
    names.push_back(n);
    if (!skip_op(",")) break;
    *unpack = true;
    if (cur().type != TokenType::kName) break;  // trailing comma
  }
  if (paren) expect_op(")");
  return names;
}

StmtPtr Parser::parse_for() {
  auto s = std::make_unique<Stmt>(StmtKind::kFor, next().line);
  s->names = parse_target_names(&s->unpack);
  if (!skip_name("in")) fail("expected token 'in', got '" + describe(cur()) + "'");
  s->exprs.push_back(parse_tuple(false, false, {"recursive"}, false));
  ExprPtr filter;
  if (skip_name("if")) filter = parse_expression(true);
  s->exprs.push_back(std::move(filter));
  if (is_name("recursive")) fail("recursive loops are not supported in chat templates");
  ++loop_depth_;
  s->bodies.push_back(parse_statements({"endfor", "else"}));
  --loop_depth_;
  if (next().value == "endfor") {
    s->bodies.emplace_back();
  } else {
    s->bodies.push_back(parse_statements({"endfor"}, true));
  }
  return s;
}

StmtPtr Parser::parse_if() {
  auto s = std::make_unique<Stmt>(StmtKind::kIf, next().line);
  while (true) {
    s->exprs.push_back(parse_tuple(false, false, {}, false));
    s->bodies.push_back(parse_statements({"elif", "else", "endif"}));
    const std::string tag = next().value;
    if (tag == "elif") continue;
    if (tag == "else") s->bodies.push_back(parse_statements({"endif"}, true));
    break;
  }
  if (s->bodies.size() == s->exprs.size()) s->bodies.emplace_back();  // empty else
  return s;
}

StmtPtr Parser::parse_set() {
  const int line = next().line;
  std::vector<std::string> names;
  std::string attr;
  bool unpack = false;
  if (cur().type == TokenType::kName && look().type == TokenType::kOperator &&
      look().value == ".") {
    names.push_back(next().value);
    next();
    attr = expect_name();
  } else {
    names = parse_target_names(&unpack);
  }
  if (skip_op("=")) {
    auto s = std::make_unique<Stmt>(StmtKind::kSet, line);
    s->names = std::move(names);
    s->attr = std::move(attr);
    s->unpack = unpack;
    s->exprs.push_back(parse_tuple(false, true, {}, false));
    return s;
  }
  if (unpack) fail("can't assign to 'tuple' in a block set");
  auto s = std::make_unique<Stmt>(StmtKind::kSetBlock, line);
  s->names = std::move(names);
  s->attr = std::move(attr);
  s->exprs.push_back(is_op("|") ? parse_filter(nullptr, false) : nullptr);
  s->bodies.push_back(parse_statements({"endset"}, true));
  return s;
}

StmtPtr Parser::parse_macro() {
  auto s = std::make_unique<Stmt>(StmtKind::kMacro, next().line);
  s->text = expect_name();
  expect_op("(");
  bool has_default = false;
  while (!is_op(")")) {
    if (!s->names.empty()) expect_op(",");
    if (is_op(")")) break;
    s->names.push_back(expect_name());
    if (skip_op("=")) {
      s->exprs.push_back(parse_expression(true));
      has_default = true;
    } else {
      if (has_default) fail("non-default argument follows default argument");
      s->exprs.push_back(nullptr);
    }
  }
  expect_op(")");
  const int saved_loops = loop_depth_;
  loop_depth_ = 0;
  s->bodies.push_back(parse_statements({"endmacro"}, true));
  loop_depth_ = saved_loops;
  return s;
}

StmtPtr Parser::parse_with() {
  auto s = std::make_unique<Stmt>(StmtKind::kWith, next().line);
  while (cur().type != TokenType::kBlockEnd) {
    if (!s->names.empty()) expect_op(",");
    s->names.push_back(expect_name());
    expect_op("=");
    s->exprs.push_back(parse_expression(true));
  }
  s->bodies.push_back(parse_statements({"endwith"}, true));
  return s;
}

StmtPtr Parser::parse_filter_block() {
  auto s = std::make_unique<Stmt>(StmtKind::kFilterBlock, next().line);
  s->exprs.push_back(parse_filter(nullptr, true));
  s->bodies.push_back(parse_statements({"endfilter"}, true));
  return s;
}

StmtPtr Parser::parse_generation() {
  auto s = std::make_unique<Stmt>(StmtKind::kGeneration, next().line);
  s->bodies.push_back(parse_statements({"endgeneration"}, true));
  return s;
}

StmtPtr Parser::parse_loop_control() {
  const Token& tok = next();
  if (loop_depth_ == 0) fail("'" + tok.value + "' outside loop", tok.line);
  return std::make_unique<Stmt>(tok.value == "break" ? StmtKind::kBreak : StmtKind::kContinue,
                                tok.line);
}

void Parser::check_names(const Body& body, bool soft) const {
  for (const StmtPtr& s : body) {
    switch (s->kind) {
      case StmtKind::kIf:
        for (const auto& e : s->exprs) check_expr(e.get(), true);
        for (const Body& b : s->bodies) check_names(b, true);
        break;
      case StmtKind::kFor:
        check_expr(s->exprs[0].get(), soft);
        check_expr(s->exprs[1].get(), false);
        check_names(s->bodies[0], false);
        check_names(s->bodies[1], soft);
        break;
      case StmtKind::kOutput:
      case StmtKind::kSet:
        check_expr(s->exprs[0].get(), soft);
        break;
      case StmtKind::kWith:
        for (const auto& e : s->exprs) check_expr(e.get(), soft);
        check_names(s->bodies[0], false);
        break;
      default:
        for (const auto& e : s->exprs) check_expr(e.get(), false);
        for (const Body& b : s->bodies) check_names(b, false);
        break;
    }
  }
}

void Parser::check_expr(const Expr* e, bool soft) const {
  if (!e) return;
  if (e->kind == ExprKind::kCond) soft = true;
  if (!soft && e->kind == ExprKind::kFilter && !find_filter(e->name))
    fail("No filter named '" + e->name + "'.", e->line);
  if (!soft && e->kind == ExprKind::kTest && !find_test(e->name))
    fail("No test named '" + e->name + "'.", e->line);
  for (const auto& c : e->children) check_expr(c.get(), soft);
  for (const auto& kw : e->kwargs) check_expr(kw.second.get(), soft);
}

}  // namespace parser_detail

TemplateAst parse_template(std::string_view source) {
  return parser_detail::Parser(tokenize(source)).parse();
}

}  // namespace anvil::jinja
