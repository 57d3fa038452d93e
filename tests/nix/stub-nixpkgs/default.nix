# `import nixpkgs { system; ... }` for tests: the stub package set of ../stub-pkgs.nix (with its defaults).
{ system, ... }:
import ../stub-pkgs.nix { }
