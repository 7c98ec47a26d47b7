// The Jinja expression parser: jinja2's precedence levels from conditional expressions down to
// literals, with filters, tests, calls, subscripts and slices (see jinja_parser_impl.h).
#include <algorithm>

#include "chat/jinja_parser_impl.h"

namespace anvil::jinja::parser_detail {

ExprPtr Parser::fin(ExprPtr e) const {
  int d = 0;
  for (const auto& c : e->children)
    if (c) d = std::max(d, c->depth);
  for (const auto& kw : e->kwargs) d = std::max(d, kw.second->depth);
  e->depth = d + 1;
  if (e->depth > kMaxTreeDepth) fail("expression nested too deeply", e->line);
  return e;
}

ExprPtr Parser::make2(ExprKind kind, int line, ExprPtr a, ExprPtr b, std::string name) const {
  auto e = make(kind, line);
  e->children.push_back(std::move(a));
  e->children.push_back(std::move(b));
  e->name = std::move(name);
  return fin(std::move(e));
}

bool Parser::is_tuple_end(const std::vector<std::string>& extra_end) const {
  const TokenType t = cur().type;
  if (t == TokenType::kVariableEnd || t == TokenType::kBlockEnd || is_op(")")) return true;
  return t == TokenType::kName &&
         std::find(extra_end.begin(), extra_end.end(), cur().value) != extra_end.end();
}

ExprPtr Parser::parse_tuple(bool simplified, bool with_condexpr,
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

ExprPtr Parser::parse_expression(bool with_condexpr) {
  DepthGuard guard(this);
  return with_condexpr ? parse_condexpr() : parse_or();
}

ExprPtr Parser::parse_condexpr() {
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

ExprPtr Parser::parse_or() {
  const int line = cur().line;
  ExprPtr left = parse_and();
  while (skip_name("or")) left = make2(ExprKind::kOr, line, std::move(left), parse_and());
  return left;
}

ExprPtr Parser::parse_and() {
  const int line = cur().line;
  ExprPtr left = parse_not();
  while (skip_name("and")) left = make2(ExprKind::kAnd, line, std::move(left), parse_not());
  return left;
}

ExprPtr Parser::parse_not() {
  if (is_name("not")) {
    DepthGuard guard(this);
    auto e = make(ExprKind::kNot, next().line);
    e->children.push_back(parse_not());
    return fin(std::move(e));
  }
  return parse_compare();
}

ExprPtr Parser::parse_compare() {
  const int line = cur().line;
  ExprPtr expr = parse_math1();
  std::vector<std::string> ops;
  std::vector<ExprPtr> operands;
  while (true) {
    if (cur().type == TokenType::kOperator &&
        (cur().value == "==" || cur().value == "!=" || cur().value == "<" || cur().value == "<=" ||
         cur().value == ">" || cur().value == ">=")) {
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

ExprPtr Parser::parse_math1() {
  const int line = cur().line;
  ExprPtr left = parse_concat();
  while (is_op("+") || is_op("-")) {
    const std::string op = next().value;
    left = make2(ExprKind::kBinary, line, std::move(left), parse_concat(), op);
  }
  return left;
}

ExprPtr Parser::parse_concat() {
  const int line = cur().line;
  ExprPtr first = parse_math2();
  if (!is_op("~")) return first;
  auto e = make(ExprKind::kConcat, line);
  e->children.push_back(std::move(first));
  while (skip_op("~")) e->children.push_back(parse_math2());
  return fin(std::move(e));
}

ExprPtr Parser::parse_math2() {
  const int line = cur().line;
  ExprPtr left = parse_pow();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    const std::string op = next().value;
    left = make2(ExprKind::kBinary, line, std::move(left), parse_pow(), op);
  }
  return left;
}

ExprPtr Parser::parse_pow() {
  const int line = cur().line;
  ExprPtr left = parse_unary(true);
  while (skip_op("**"))
    left = make2(ExprKind::kBinary, line, std::move(left), parse_unary(true), "**");
  return left;
}

ExprPtr Parser::parse_unary(bool with_filter) {
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

ExprPtr Parser::parse_primary() {
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

ExprPtr Parser::parse_list() {
  auto e = make(ExprKind::kList, next().line);
  while (!is_op("]")) {
    if (!e->children.empty()) expect_op(",");
    if (is_op("]")) break;
    e->children.push_back(parse_expression(true));
  }
  expect_op("]");
  return fin(std::move(e));
}

ExprPtr Parser::parse_dict() {
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

ExprPtr Parser::parse_postfix(ExprPtr node) {
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

ExprPtr Parser::parse_filter_expr(ExprPtr node) {
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

ExprPtr Parser::parse_subscript(ExprPtr node) {
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

ExprPtr Parser::parse_subscribed() {
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

void Parser::parse_call_args(Expr* e) {
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

ExprPtr Parser::parse_call(ExprPtr node) {
  DepthGuard guard(this);
  auto e = make(ExprKind::kCall, cur().line);
  e->children.push_back(std::move(node));
  parse_call_args(e.get());
  return fin(std::move(e));
}

std::string Parser::parse_dotted_name() {
  std::string name = expect_name();
  while (skip_op(".")) name += "." + expect_name();
  return name;
}

ExprPtr Parser::parse_filter(ExprPtr node, bool start_inline) {
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

ExprPtr Parser::parse_test(ExprPtr node) {
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

}  // namespace anvil::jinja::parser_detail
