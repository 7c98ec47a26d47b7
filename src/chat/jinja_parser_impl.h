// The Jinja parser's class, shared by jinja_parser.cc (template structure and statements) and
// jinja_parser_expr.cc (expressions). Internal to the engine.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja_ast.h"
#include "chat/jinja_error.h"
#include "chat/jinja_lexer.h"

namespace anvil::jinja::parser_detail {

// Nesting limits that keep the recursive descent (and later the interpreter) off the C++ stack's
// edge on hostile input.
inline constexpr int kMaxExpressionDepth = 400;
inline constexpr int kMaxTreeDepth = 300;
inline constexpr int kMaxBlockDepth = 200;

// How jinja2 names a token in error messages ("end of print statement", "integer", ...).
std::string describe(const Token& t);

// A recursive-descent parser over the token list that mirrors jinja2's Parser, statement by
// statement and precedence level by level.
class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  TemplateAst parse();

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

  void expect_type(TokenType type, const std::string& what);
  void expect_op(std::string_view op);
  std::string expect_name();
  [[noreturn]] void fail_eof(const std::vector<std::string>& end_tags) const;
  [[noreturn]] void fail_unknown_tag(const std::string& name, int line) const;

  // ---- statements ---------------------------------------------------------------------------
  Body subparse(const std::vector<std::string>& end_tags);

  // The body of a block statement, up to one of `end_tags`; with `drop_end` the end tag's name
  // is consumed too.
  Body parse_statements(const std::vector<std::string>& end_tags, bool drop_end = false);
  StmtPtr parse_statement();

  // Target names of for/set/with: `a` or `a, b` (optionally parenthesized).
  std::vector<std::string> parse_target_names(bool* unpack);
  StmtPtr parse_for();
  StmtPtr parse_if();
  StmtPtr parse_set();
  StmtPtr parse_macro();
  StmtPtr parse_with();
  StmtPtr parse_filter_block();
  StmtPtr parse_generation();
  StmtPtr parse_loop_control();

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
  ExprPtr fin(ExprPtr e) const;
  ExprPtr make2(ExprKind kind, int line, ExprPtr a, ExprPtr b, std::string name = "") const;
  bool is_tuple_end(const std::vector<std::string>& extra_end) const;

  ExprPtr parse_tuple(bool simplified, bool with_condexpr,
                      const std::vector<std::string>& extra_end, bool explicit_parentheses);
  ExprPtr parse_expression(bool with_condexpr);
  ExprPtr parse_condexpr();
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  ExprPtr parse_list();
  ExprPtr parse_dict();
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_filter_expr(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node);
  ExprPtr parse_subscribed();
  void parse_call_args(Expr* e);
  ExprPtr parse_call(ExprPtr node);
  std::string parse_dotted_name();
  ExprPtr parse_filter(ExprPtr node, bool start_inline);
  ExprPtr parse_test(ExprPtr node);

  // ---- unknown filters and tests ------------------------------------------------------------
  // Like jinja2's compiler, an unknown filter or test is an error when the template is compiled,
  // except inside an if statement or an inline if (a "soft" frame), where it only fails if it
  // is reached. Loop bodies, macros, with blocks and block sets start hard frames again.
  void check_names(const Body& body, bool soft) const;
  void check_expr(const Expr* e, bool soft) const;

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int loop_depth_ = 0;
  int expr_depth_ = 0;
  int block_depth_ = 0;
  std::vector<std::string> tag_stack_;
  std::vector<std::vector<std::string>> end_stack_;
};

}  // namespace anvil::jinja::parser_detail
