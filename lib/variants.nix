# Variant names, derived the way kernel_builder/formats/variants.py derives them (that module documents the rules):
#   torch<torch>[-cxx11]-<compute>-<cpu>-<os>       torch213-cxx11-cu130-x86_64-linux (cxx11 on Linux only)
#   torch-stable-abi<abi>-<compute>-<cpu>-<os>      torch-stable-abi212-cpu-aarch64-darwin
#   torch-<backend>                                 torch-cuda, torch-cann (noarch: named after the backend)
# A framework version is its major digit then its minor (2.13 -> 213); a compute version its major then its
# minor digit (cuda 13.0 -> cu130, xpu 2025.3 -> xpu20253).
let
  inherit (builtins) elem elemAt match toString;

  plainCompute = [ "cpu" "metal" "neuron" "tpu" ];
  computePrefix = {
    cuda = "cu";
    rocm = "rocm";
    xpu = "xpu";
    cann = "cann";
  };

  # [ 2 13 ] -> "213"
  frameworkVersionName =
    version:
    let
      major = elemAt version 0;
      minor = elemAt version 1;
    in
    if major < 0 || major > 9 || minor < 0 then
      throw "kernel-builder: version ${toString major}.${toString minor} cannot be encoded in a variant name: the major must be one digit"
    else
      "${toString major}${toString minor}";

  # "cuda" [ 13 0 ] -> "cu130"; "cpu" null -> "cpu"
  computeName =
    backend: version:
    if elem backend plainCompute then
      backend
    else if !(computePrefix ? ${backend}) then
      throw "kernel-builder: unknown backend ${builtins.toJSON backend}"
    else if version == null then
      throw "kernel-builder: backend ${backend} needs a version to name a compiled variant"
    else if elemAt version 1 < 0 || elemAt version 1 > 9 then
      throw "kernel-builder: ${backend} version ${toString (elemAt version 0)}.${toString (elemAt version 1)} cannot be encoded in a variant name: the minor must be one digit"
    else
      "${computePrefix.${backend}}${toString (elemAt version 0)}${toString (elemAt version 1)}";

  # "x86_64-linux" -> { cpu = "x86_64"; os = "linux"; }
  splitSystem =
    system:
    let
      parts = match "([^-]+)-(.+)" system;
    in
    {
      cpu = elemAt parts 0;
      os = elemAt parts 1;
    };

  # The name of a compiled variant: Torch `torch` ([ major minor ]), compute `backend`/`version` (a
  # [ major minor ] or null), on `system`; with `stableAbi` ([ major minor ]) the stable-ABI variant.
  compiledVariantName =
    {
      torch,
      backend,
      version,
      system,
      stableAbi ? null,
    }:
    let
      sys = splitSystem system;
      tail = "${computeName backend version}-${sys.cpu}-${sys.os}";
    in
    if stableAbi != null then
      "torch-stable-abi${frameworkVersionName stableAbi}-${tail}"
    else
      "torch${frameworkVersionName torch}${if sys.os == "linux" then "-cxx11" else ""}-${tail}";

  noarchVariantName = backend: "torch-${backend}";
in
{
  inherit
    frameworkVersionName
    computeName
    splitSystem
    compiledVariantName
    noarchVariantName
    ;
}
