# kernel-builder's Nix functions. Pure where they can be (no nixpkgs needed): the matrix, variant names and the
# candidates of a project; genKernelFlakeOutputs needs nixpkgs for its derivations (pass `nixpkgs`, or
# `pkgsFor` when calling it). The flake re-exports this set as `lib`.
{
  nixpkgs ? null,
}:
let
  matrix = import ./matrix.nix;
  project = import ./project.nix;
  candidates = import ./candidates.nix;
  variants = import ./variants.nix;
  package = import ./package.nix;
  flakeOutputs = import ./flake-outputs.nix { inherit nixpkgs; };
in
{
  # The entries of kernel_builder/formats/build-matrix.json, as the file has them.
  buildMatrix = (builtins.fromJSON (builtins.readFile ../kernel_builder/formats/build-matrix.json)).entries;
  # The systems the matrix names.
  matrixSystems = matrix.systems;

  inherit (project) readProject;
  inherit (variants) compiledVariantName noarchVariantName computeName;

  # candidates { path; } -> every candidate variant of the project at `path` (a directory with build.toml), as
  # `kernel-builder list-variants --json` lists them: { variant, backend, system, required, ... }.
  candidates = { path }: candidates.candidates (project.readProject path);
  # variantNames { path; system; } -> the names of the variants `system` builds (pure-Python ones included).
  variantNames = { path, system }: map (c: c.variant) (candidates.candidatesFor (project.readProject path) system);

  # kernelBuilderFor pkgs ps -> this tool as a package of the Python package set `ps` of nixpkgs `pkgs`.
  inherit (package) kernelBuilderFor;

  inherit (flakeOutputs) genKernelFlakeOutputs;
}
