//! Directive discovery: walk up from a touched directory to the project root (or the
//! `~/.claude` cap), collecting `.directives/` files.
