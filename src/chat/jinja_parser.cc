// The Jinja parser (see jinja_parser.h): a recursive-descent parser over the token list that
// mirrors jinja2's Parser, statement by statement and precedence level by level.
#include "chat/jinja_parser.h"

#include <algorithm>
#include <initializer_list>

#include "chat/jinja_builtins.h"
#include "chat/jinja_error.h"
#include "chat/jinja_lexer.h"

namespace anvil::jinja {

namespace {

// Nesting limits that keep the recursive descent (and later the interpreter) off the C++ stack's
// edge on hostile input.
constexpr int kMaxExpressionDepth = 400;
constexpr int kMaxTreeDepth = 300;
constexpr int kMaxBlockDepth = 200;

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

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) out += " or ";
    out += "'" + names[i] + "'";
  }
  return out;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  TemplateAst parse() {
    TemplateAst ast;
    ast.body = subparse({});
    check_names(ast.body, false);
    return ast;
  }

 private:
  // ---- token stream -------------------------------------------------------------------------
  const Token& cur() const { return tokens_[pos_]; }
  const Token& look() const { return tokens_[std::min(pos_ + 1, tokens_.size() - 1)]; }
  const Token& next() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool is_op(std::string_view op) const {
    return cur().type == TokenType::kOperator && cur().value == op;
  }
  bool is_name(std::string_view name) const {
    return cur().type == TokenType::kName && cur().value == name;
  }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }

  [[noreturn]] void fail(const std::string& message, int line = 0) const {
    throw TemplateError(message, line ? line : cur().line);
  }

  void expect_type(TokenType type, const std::string& what) {
    if (cur().type != type) {
      if (cur().type == TokenType::kEof)
        fail("unexpected end of template, expected '" + what + "'.");
      fail("expected token '" + what + "', got '" + describe(cur()) + "'");
    }
    next();
  }
  void expect_op(std::string_view op) {
    if (!is_op(op)) {
      if (cur().type == TokenType::kEof) fail_eof({});
      fail("expected token '" + std::string(op) + "', got '" + describe(cur()) + "'");
    }
    next();
  }
  std::string expect_name() {
    if (cur().type != TokenType::kName) {
      if (cur().type == TokenType::kEof) fail_eof({});
      fail("expected token 'name', got '" + describe(cur()) + "'");
    }
    return next().value;
  }

  [[noreturn]] void fail_eof(const std::vector<std::string>& end_tags) const {
    std::string message = "Unexpected end of template.";
    const std::vector<std::string>* expected = &end_tags;
    if (expected->empty() && !end_stack_.empty()) expected = &end_stack_.back();
    if (!expected->empty())
      message += " Jinja was looking for the following tags: " + quoted_list(*expected) + ".";
    if (!tag_stack_.empty())
      message += " The innermost block that needs to be closed is '" + tag_stack_.back() + "'.";
    fail(message);
  }

  [[noreturn]] void fail_unknown_tag(const std::string& name, int line) const {
    std::string message = "Encountered unknown tag '" + name + "'.";
    if (!end_stack_.empty()) {
      message += " Jinja was looking for the following tags: " + quoted_list(end_stack_.back()) +
                 ". The innermost block that needs to be closed is '" + tag_stack_.back() + "'.";
    }
    fail(message, line);
  }

  // ---- statements ---------------------------------------------------------------------------
  Body subparse(const std::vector<std::string>& end_tags) {
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

  // The body of a block statement, up to one of `end_tags`; with `drop_end` the end tag's name
  // is consumed too.
  Body parse_statements(const std::vector<std::string>& end_tags, bool drop_end = false) {
    skip_op(":");
    expect_type(TokenType::kBlockEnd, "end of statement block");
    Body body = subparse(end_tags);
    if (cur().type == TokenType::kEof) fail_eof(end_tags);
    if (drop_end) next();
    return body;
  }

  StmtPtr parse_statement() {
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

  // Target names of for/set/with: `a` or `a, b` (optionally parenthesized).
  std::vector<std::string> parse_target_names(bool* unpack) {
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

  StmtPtr parse_for() {
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

  StmtPtr parse_if() {
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

  StmtPtr parse_set() {
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

  StmtPtr parse_macro() {
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

  StmtPtr parse_with() {
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

  StmtPtr parse_filter_block() {
    auto s = std::make_unique<Stmt>(StmtKind::kFilterBlock, next().line);
    s->exprs.push_back(parse_filter(nullptr, true));
    s->bodies.push_back(parse_statements({"endfilter"}, true));
    return s;
  }

  StmtPtr parse_generation() {
    auto s = std::make_unique<Stmt>(StmtKind::kGeneration, next().line);
    s->bodies.push_back(parse_statements({"endgeneration"}, true));
    return s;
  }

  StmtPtr parse_loop_control() {
    const Token& tok = next();
    if (loop_depth_ == 0) fail("'" + tok.value + "' outside loop", tok.line);
    return std::make_unique<Stmt>(tok.value == "break" ? StmtKind::kBreak : StmtKind::kContinue,
                                  tok.line);
  }

  // ---- expressions --------------------------------------------------------------------------
  struct DepthGuard {
    explicit DepthGuard(Parser* p) : parser(p) {
      if (++parser->expr_depth_ > kMaxExpressionDepth) parser->fail("expression nested too deeply");
    }
    ~DepthGuard() { --parser->expr_depth_; }
    Parser* parser;
  };

  static ExprPtr make(ExprKind kind, int line) { return std::make_unique<Expr>(kind, line); }
  // Records the height of a finished node; refuses trees deep enough to threaten the stack when
  // they are evaluated or destroyed.
  ExprPtr fin(ExprPtr e) const {
    int d = 0;
    for (const auto& c : e->children)
      if (c) d = std::max(d, c->depth);
    for (const auto& kw : e->kwargs) d = std::max(d, kw.second->depth);
    e->depth = d + 1;
    if (e->depth > kMaxTreeDepth) fail("expression nested too deeply", e->line);
    return e;
  }
  ExprPtr make2(ExprKind kind, int line, ExprPtr a, ExprPtr b, std::string name = "") const {
    auto e = make(kind, line);
    e->children.push_back(std::move(a));
    e->children.push_back(std::move(b));
    e->name = std::move(name);
    return fin(std::move(e));
  }

  bool is_tuple_end(const std::vector<std::string>& extra_end) const {
    const TokenType t = cur().type;
    if (t == TokenType::kVariableEnd || t == TokenType::kBlockEnd || is_op(")")) return true;
    return t == TokenType::kName &&
           std::find(extra_end.begin(), extra_end.end(), cur().value) != extra_end.end();
  }

  ExprPtr parse_tuple(bool simplified, bool with_condexpr,
                      const std::vector<std::string>& extra_end, bool explicit_parentheses) {
    DepthGuard guard(this);
    int line = cur().line;
    std::vector<ExprPtr> args;
    bool is_tuple = false;
    while (true) {
      if (!args.empty()) expect_op(",");
      if (is_tuple_end(extra_end)) break;
      args.push_back(simplified ? parse_primary() : parse_expression(with_condexpr));
      if (is_op(",")) {
        is_tuple = true;
      } else {
        break;
      }
      line = cur().line;
    }
    if (!is_tuple) {
      if (!args.empty()) return std::move(args[0]);
      if (!explicit_parentheses) {
        if (cur().type == TokenType::kEof) fail_eof({});
        fail("Expected an expression, got '" + describe(cur()) + "'");
      }
    }
    auto e = make(ExprKind::kTuple, line);
    e->children = std::move(args);
    return fin(std::move(e));
  }

  ExprPtr parse_expression(bool with_condexpr) {
    DepthGuard guard(this);
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  ExprPtr parse_condexpr() {
    const int line = cur().line;
    ExprPtr expr1 = parse_or();
    while (skip_name("if")) {
      ExprPtr expr2 = parse_or();
      ExprPtr expr3;
      if (skip_name("else")) expr3 = parse_condexpr();
      auto e = make(ExprKind::kCond, line);
      e->children.push_back(std::move(expr2));
      e->children.push_back(std::move(expr1));
      e->children.push_back(std::move(expr3));
      expr1 = fin(std::move(e));
    }
    return expr1;
  }

  ExprPtr parse_or() {
    const int line = cur().line;
    ExprPtr left = parse_and();
    while (skip_name("or")) left = make2(ExprKind::kOr, line, std::move(left), parse_and());
    return left;
  }

  ExprPtr parse_and() {
    const int line = cur().line;
    ExprPtr left = parse_not();
    while (skip_name("and")) left = make2(ExprKind::kAnd, line, std::move(left), parse_not());
    return left;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      DepthGuard guard(this);
      auto e = make(ExprKind::kNot, next().line);
      e->children.push_back(parse_not());
      return fin(std::move(e));
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const int line = cur().line;
    ExprPtr expr = parse_math1();
    std::vector<std::string> ops;
    std::vector<ExprPtr> operands;
    while (true) {
      if (cur().type == TokenType::kOperator &&
          (cur().value == "==" || cur().value == "!=" || cur().value == "<" ||
           cur().value == "<=" || cur().value == ">" || cur().value == ">=")) {
        ops.push_back(next().value);
      } else if (skip_name("in")) {
        ops.push_back("in");
      } else if (is_name("not") && look().type == TokenType::kName && look().value == "in") {
        next();
        next();
        ops.push_back("notin");
      } else {
        break;
      }
      operands.push_back(parse_math1());
    }
    if (ops.empty()) return expr;
    auto e = make(ExprKind::kCompare, line);
    e->children.push_back(std::move(expr));
    for (auto& o : operands) e->children.push_back(std::move(o));
    e->ops = std::move(ops);
    return fin(std::move(e));
  }

  ExprPtr parse_math1() {
    const int line = cur().line;
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      const std::string op = next().value;
      left = make2(ExprKind::kBinary, line, std::move(left), parse_concat(), op);
    }
    return left;
  }

  ExprPtr parse_concat() {
    const int line = cur().line;
    ExprPtr first = parse_math2();
    if (!is_op("~")) return first;
    auto e = make(ExprKind::kConcat, line);
    e->children.push_back(std::move(first));
    while (skip_op("~")) e->children.push_back(parse_math2());
    return fin(std::move(e));
  }

  ExprPtr parse_math2() {
    const int line = cur().line;
    ExprPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const std::string op = next().value;
      left = make2(ExprKind::kBinary, line, std::move(left), parse_pow(), op);
    }
    return left;
  }

  ExprPtr parse_pow() {
    const int line = cur().line;
    ExprPtr left = parse_unary(true);
    while (skip_op("**"))
      left = make2(ExprKind::kBinary, line, std::move(left), parse_unary(true), "**");
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(this);
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      const bool minus = is_op("-");
      node = make(minus ? ExprKind::kNeg : ExprKind::kPos, next().line);
      node->children.push_back(parse_unary(false));
      node = fin(std::move(node));
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    DepthGuard guard(this);
    const Token& tok = cur();
    const int line = tok.line;
    switch (tok.type) {
      case TokenType::kName: {
        const std::string name = next().value;
        auto e = make(ExprKind::kConst, line);
        if (name == "true" || name == "True") {
          e->value = Value::boolean(true);
        } else if (name == "false" || name == "False") {
          e->value = Value::boolean(false);
        } else if (name == "none" || name == "None") {
          e->value = Value::none();
        } else {
          e->kind = ExprKind::kName;
          e->name = name;
        }
        return e;
      }
      case TokenType::kString: {
        std::string s;
        while (cur().type == TokenType::kString) s += next().value;
        auto e = make(ExprKind::kConst, line);
        e->value = Value::string(std::move(s));
        return e;
      }
      case TokenType::kInteger:
      case TokenType::kFloat: {
        auto e = make(ExprKind::kConst, line);
        e->value = tok.type == TokenType::kInteger ? Value::integer(tok.int_value)
                                                   : Value::number(tok.float_value);
        next();
        return e;
      }
      case TokenType::kOperator:
        if (tok.value == "(") {
          next();
          ExprPtr e = parse_tuple(false, true, {}, true);
          expect_op(")");
          return e;
        }
        if (tok.value == "[") return parse_list();
        if (tok.value == "{") return parse_dict();
        break;
      case TokenType::kEof:
        fail_eof({});
      default:
        break;
    }
    fail("unexpected '" + describe(tok) + "'");
  }

  ExprPtr parse_list() {
    auto e = make(ExprKind::kList, next().line);
    while (!is_op("]")) {
      if (!e->children.empty()) expect_op(",");
      if (is_op("]")) break;
      e->children.push_back(parse_expression(true));
    }
    expect_op("]");
    return fin(std::move(e));
  }

  ExprPtr parse_dict() {
    auto e = make(ExprKind::kDict, next().line);
    while (!is_op("}")) {
      if (!e->children.empty()) expect_op(",");
      if (is_op("}")) break;
      e->children.push_back(parse_expression(true));
      expect_op(":");
      e->children.push_back(parse_expression(true));
    }
    expect_op("}");
    return fin(std::move(e));
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(".") || is_op("[")) {
        node = parse_subscript(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op("|")) {
        node = parse_filter(std::move(node), false);
      } else if (is_name("is")) {
        node = parse_test(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    DepthGuard guard(this);
    const Token& tok = next();
    const int line = tok.line;
    if (tok.value == ".") {
      const Token& attr = cur();
      if (attr.type == TokenType::kName) {
        auto e = make(ExprKind::kGetAttr, line);
        e->children.push_back(std::move(node));
        e->name = next().value;
        return fin(std::move(e));
      }
      if (attr.type != TokenType::kInteger) fail("expected name or number", attr.line);
      auto index = make(ExprKind::kConst, attr.line);
      index->value = Value::integer(attr.int_value);
      next();
      return make2(ExprKind::kGetItem, line, std::move(node), std::move(index));
    }
    std::vector<ExprPtr> args;
    while (!is_op("]")) {
      if (!args.empty()) expect_op(",");
      args.push_back(parse_subscribed());
    }
    expect_op("]");
    ExprPtr index;
    if (args.size() == 1) {
      index = std::move(args[0]);
    } else {
      index = make(ExprKind::kTuple, line);
      index->children = std::move(args);
      index = fin(std::move(index));
    }
    return make2(ExprKind::kGetItem, line, std::move(node), std::move(index));
  }

  ExprPtr parse_subscribed() {
    const int line = cur().line;
    std::vector<ExprPtr> args;
    if (is_op(":")) {
      next();
      args.push_back(nullptr);
    } else {
      ExprPtr node = parse_expression(true);
      if (!is_op(":")) return node;
      next();
      args.push_back(std::move(node));
    }
    if (is_op(":")) {
      args.push_back(nullptr);
    } else if (!is_op("]") && !is_op(",")) {
      args.push_back(parse_expression(true));
    } else {
      args.push_back(nullptr);
    }
    if (is_op(":")) {
      next();
      if (!is_op("]") && !is_op(",")) {
        args.push_back(parse_expression(true));
      } else {
        args.push_back(nullptr);
      }
    } else {
      args.push_back(nullptr);
    }
    auto e = make(ExprKind::kSlice, line);
    e->children = std::move(args);
    return fin(std::move(e));
  }

  void parse_call_args(Expr* e) {
    const int line = cur().line;
    expect_op("(");
    bool require_comma = false;
    while (!is_op(")")) {
      if (require_comma) {
        expect_op(",");
        if (is_op(")")) break;
      }
      if (is_op("*") || is_op("**"))
        fail("*args and **kwargs in calls are not supported in chat templates");
      if (cur().type == TokenType::kName && look().type == TokenType::kOperator &&
          look().value == "=") {
        std::string key = next().value;
        next();
        e->kwargs.emplace_back(std::move(key), parse_expression(true));
      } else {
        if (!e->kwargs.empty()) fail("invalid syntax for function call expression", line);
        e->children.push_back(parse_expression(true));
      }
      require_comma = true;
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr node) {
    DepthGuard guard(this);
    auto e = make(ExprKind::kCall, cur().line);
    e->children.push_back(std::move(node));
    parse_call_args(e.get());
    return fin(std::move(e));
  }

  std::string parse_dotted_name() {
    std::string name = expect_name();
    while (skip_op(".")) name += "." + expect_name();
    return name;
  }

  ExprPtr parse_filter(ExprPtr node, bool start_inline) {
    while (is_op("|") || start_inline) {
      DepthGuard guard(this);
      if (!start_inline) next();
      const int line = cur().line;
      auto e = make(ExprKind::kFilter, line);
      e->name = parse_dotted_name();
      e->children.push_back(std::move(node));
      if (is_op("(")) parse_call_args(e.get());
      node = fin(std::move(e));
      start_inline = false;
    }
    return node;
  }

  ExprPtr parse_test(ExprPtr node) {
    DepthGuard guard(this);
    const int line = next().line;
    const bool negated = skip_name("not");
    auto e = make(ExprKind::kTest, line);
    e->name = parse_dotted_name();
    e->children.push_back(std::move(node));
    const TokenType t = cur().type;
    if (is_op("(")) {
      parse_call_args(e.get());
    } else if ((t == TokenType::kName || t == TokenType::kString || t == TokenType::kInteger ||
                t == TokenType::kFloat || is_op("[") || is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) fail("You cannot chain multiple tests with is");
      e->children.push_back(parse_postfix(parse_primary()));
    }
    e = fin(std::move(e));
    if (!negated) return e;
    auto n = make(ExprKind::kNot, line);
    n->children.push_back(std::move(e));
    return fin(std::move(n));
  }

  // ---- unknown filters and tests ------------------------------------------------------------
  // Like jinja2's compiler, an unknown filter or test is an error when the template is compiled,
  // except inside an if statement or an inline if (a "soft" frame), where it only fails if it
  // is reached. Loop bodies, macros, with blocks and block sets start hard frames again.
  void check_names(const Body& body, bool soft) const {
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

  void check_expr(const Expr* e, bool soft) const {
    if (!e) return;
    if (e->kind == ExprKind::kCond) soft = true;
    if (!soft && e->kind == ExprKind::kFilter && !find_filter(e->name))
      fail("No filter named '" + e->name + "'.", e->line);
    if (!soft && e->kind == ExprKind::kTest && !find_test(e->name))
      fail("No test named '" + e->name + "'.", e->line);
    for (const auto& c : e->children) check_expr(c.get(), soft);
    for (const auto& kw : e->kwargs) check_expr(kw.second.get(), soft);
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int loop_depth_ = 0;
  int expr_depth_ = 0;
  int block_depth_ = 0;
  std::vector<std::string> tag_stack_;
  std::vector<std::vector<std::string>> end_stack_;
};

}  // namespace

TemplateAst parse_template(std::string_view source) {
  return Parser(tokenize(source)).parse();
}

}  // namespace anvil::jinja
