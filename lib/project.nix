# What the variant set of a kernel project depends on, read from its build.toml with builtins.fromTOML.
#
# Only edition 5 (the current form) is read here; `kernel-builder update-build` rewrites older forms, and
# `kernel-builder check-config` validates a file (this reader trusts a file that passes it).
let
  inherit (builtins)
    attrValues
    elem
    filter
    fromTOML
    isAttrs
    isString
    map
    pathExists
    readFile
    toString
    ;

  # A path, a string or a flake's `self` (an attribute set with outPath) -> an absolute path string.
  rootOf = path: toString (if isAttrs path then path.outPath else path);

  readProject =
    path:
    let
      root = rootOf path;
      file = "${root}/build.toml";
      fail = message: throw "kernel-builder: ${file}: ${message}";
      doc =
        if pathExists file then
          fromTOML (readFile file)
        else
          throw "kernel-builder: ${root} has no build.toml (pass the kernel's directory as `path`)";
      general = doc.general or (fail "no [general] table");
      edition = general.edition or null;
      framework =
        if doc ? torch then
          "torch"
        else if doc ? "torch-noarch" then
          "torch-noarch"
        else if doc ? "tvm-ffi" then
          "tvm-ffi"
        else
          fail "no framework table: add [torch] (compiled) or [torch-noarch] (pure Python)";
      torch = doc.torch or { };
      kernels = attrValues (doc.kernel or { });
      backends = general.backends or (fail "[general] has no `backends`");
      usedBackends = map (kernel: kernel.backend) kernels;
      # Backends with compiled variants: those of `backends` with a [kernel.*] section (Torch only).
      aotBackends = if framework == "torch" then filter (backend: elem backend usedBackends) backends else [ ];
      stableAbi = torch."stable-abi" or null;
      cuda = general.cuda or { };
    in
    if edition == null then
      fail "a legacy build.toml (no `edition = 5` in [general]): run `kernel-builder update-build ${root}` to rewrite it in the current edition"
    else if edition != 5 then
      fail "edition ${toString edition} is not one this lib reads (5)"
    else
      {
        inherit
          root
          framework
          backends
          aotBackends
          ;
        name = general.name;
        pyName = builtins.replaceStrings [ "-" ] [ "_" ] general.name;
        version = general.version;
        repoId = (general.hub or { })."repo-id" or null;
        # Backends built as pure-Python variants: every backend without compiled code.
        noarchBackends = filter (backend: !(elem backend aotBackends)) backends;
        torchMinver = torch.minver or null;
        torchMaxver = torch.maxver or null;
        cudaMinver = cuda.minver or null;
        cudaMaxver = cuda.maxver or null;
        # The stable-ABI version (a string) of `backend`'s variants, or null.
        stableAbiFor =
          backend:
          if stableAbi == null then
            null
          else if isString stableAbi then
            stableAbi
          else
            stableAbi.${backend} or null;
        hasTests = pathExists "${root}/tests";
        hasCard = pathExists "${root}/CARD.md";
      };
in
{
  inherit readProject rootOf;
}
