//! Lexer (logos) and indentation layout.
