// The syntax tree of a parsed Jinja template: expressions and statements, each with the line it
// starts on so that errors can name it.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja_value.h"

namespace anvil::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind {
  kConst,    // value
  kName,     // name
  kList,     // children: items
  kTuple,    // children: items
  kDict,     // children: key0, value0, key1, value1, ...
  kGetAttr,  // children: [object]; name: attribute
  kGetItem,  // children: [object, index]
  kSlice,    // children: [start, stop, step], each may be null
  kCall,     // children: [callee, positional...]; kwargs
  kFilter,   // children: [input (null inside filter blocks), positional...]; name; kwargs
  kTest,     // children: [input, positional...]; name; kwargs
  kNot,      // children: [operand]
  kNeg,      // children: [operand]
  kPos,      // children: [operand]
  kBinary,   // children: [left, right]; name: + - * / // % **
  kConcat,   // children: operands of ~
  kCompare,  // children: [first, operand...]; ops: == != < <= > >= in notin
  kAnd,      // children: [left, right]
  kOr,       // children: [left, right]
  kCond,     // children: [condition, then, else (may be null)]
};

struct Expr {
  ExprKind kind;
  int line;
  Value value;
  std::string name;
  std::vector<ExprPtr> children;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
  int depth = 1;  // height of the subtree

  Expr(ExprKind k, int l) : kind(k), line(l) {}
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class StmtKind {
  kText,      // text
  kOutput,    // exprs: [expression]
  kIf,        // exprs: conditions; bodies: one per condition, then the else body
  kFor,       // names: targets; exprs: [iterable, filter (may be null)]; bodies: [body, else]
  kSet,       // names: targets; attr: namespace attribute; exprs: [value]
  kSetBlock,  // names: [target]; attr; exprs: [filter chain (may be null)]; bodies: [body]
  kMacro,     // text: name; names: parameters; exprs: defaults (null = none); bodies: [body]
  kBreak,
  kContinue,
  kFilterBlock,  // exprs: [filter chain]; bodies: [body]
  kWith,         // names: targets; exprs: values; bodies: [body]
  kGeneration,   // bodies: [body]
};

struct Stmt {
  StmtKind kind;
  int line;
  std::string text;
  std::string attr;
  bool unpack = false;  // targets were written as a tuple (`for k, v in ...`)
  std::vector<std::string> names;
  std::vector<ExprPtr> exprs;
  std::vector<Body> bodies;

  Stmt(StmtKind k, int l) : kind(k), line(l) {}
};

/// A parsed template.
struct TemplateAst {
  Body body;
};

}  // namespace anvil::jinja
