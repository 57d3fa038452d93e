# genKernelFlakeOutputs: the outputs of a kernel project's flake. Every derivation runs kernel-builder itself
# (`kernel-builder build --variant <v> --offline`), so the build logic lives in one place: the Python tool.
{ nixpkgs }:
let
  inherit (builtins)
    baseNameOf
    concatStringsSep
    elem
    filter
    isAttrs
    listToAttrs
    map
    match
    stringLength
    substring
    ;
  versions = import ./versions.nix;
  matrix = import ./matrix.nix;
  inherit (import ./project.nix) readProject rootOf;
  inherit (import ./candidates.nix) candidatesFor;
  inherit (import ./package.nix) kernelBuilderFor;

  genAttrs = names: f: listToAttrs (map (name: { inherit name; value = f name; }) names);
  # { <name of x> = f x; } for every x of a list.
  attrsOf = nameOf: f: list: listToAttrs (map (x: { name = nameOf x; value = f x; }) list);
  optional = condition: value: if condition then [ value ] else [ ];
  optionals = condition: values: if condition then values else [ ];

  # The torch a variant is built with, from the caller's nixpkgs: its CPU build for cpu variants, its CUDA build
  # for cuda variants, any for pure-Python ones (only the import check uses it); null where nixpkgs has none.
  defaultTorchFor =
    { python, variant, ... }:
    let
      ps = python.pkgs;
    in
    if variant.system == null then
      ps.torch or null
    else if variant.backend == "cpu" then
      ps.torchWithoutCuda or ps.torch or null
    else if variant.backend == "cuda" then
      ps.torchWithCuda or null
    else
      null;

  # The CUDA toolkit of a cuda variant: the one torch was built with, where torch says.
  defaultCudaToolkitFor = { pkgs, torch, ... }: (torch.cudaPackages or pkgs.cudaPackages).cudatoolkit;

  # The CUDA version ("12.8") of a torch package, null for a CPU build.
  torchCuda =
    torch:
    if torch.cudaSupport or false then
      torch.cudaPackages.cudaMajorMinorVersion or torch.cudaPackages.cudaVersion or null
    else
      null;

  # Whether `torch` gives exactly `variant` (kernel-builder --offline builds nothing else). Decided at
  # evaluation time from the package's version, so `bundle` and `checks` hold only variants that can build.
  serves =
    variant: torch:
    let
      torchVersion = versions.majorMinor (versions.parse (versions.release torch.version));
      entry = variant.entry;
    in
    torch != null
    && (
      entry == null
      || (
        (
          if variant.stableAbi == null then
            torchVersion == entry.torchVersion
          else
            !(versions.lessThan torchVersion variant.stableAbi)
        )
        && (if variant.backend == "cuda" then torchCuda torch == entry.version else torchCuda torch == null)
      )
    );

  # The project's files, without build outputs or editor state: the source every derivation starts from.
  projectSource =
    project:
    builtins.path {
      path = project.root;
      name = "${project.name}-source";
      filter =
        path: type:
        let
          rel = substring (stringLength project.root + 1) (-1) (toString path);
          name = baseNameOf path;
        in
        !(elem rel [ "build" ".kernel-builder" "result" ])
        && name != "__pycache__"
        && match ".*\\.pyc" name == null;
    };

  genKernelFlakeOutputs =
    {
      # The kernel's flake: its revision is recorded in metadata.json.
      self,
      # The kernel's directory (the one holding build.toml), inside `self`.
      path ? self,
      systems ? matrix.systems,
      pkgsFor ? (
        system:
        import nixpkgs {
          inherit system;
          config.allowUnfree = true; # the CUDA toolkit's licence
        }
      ),
      # { pkgs, variant } -> the Python to build `variant` with (variant is null for the dev shell); a
      # different nixpkgs per Torch version goes here.
      pythonFor ? ({ pkgs, ... }: pkgs.python3),
      # { pkgs, python, variant } -> a torch of python.pkgs, or null; see defaultTorchFor.
      torchFor ? defaultTorchFor,
      # { pkgs, torch, variant } -> a CUDA toolkit (CUDA_HOME) for cuda variants.
      cudaToolkitFor ? defaultCudaToolkitFor,
      # The dev shell's torch: { pkgs, python } -> a torch of python.pkgs.
      devTorchFor ? ({ python, ... }: python.pkgs.torch),
      # Passed as --unique-id; null: the content-derived id (the same with or without Nix).
      uniqueId ? null,
      # LOCAL_KERNELS maps this repo id to the project's build/ (default: [general.hub] repo-id).
      repoId ? null,
      # Backends whose variants' tests run in `checks` (a Nix sandbox has no GPU).
      checkBackends ? [ "cpu" ],
      # ps -> extra Python packages the kernel's tests need.
      pythonCheckInputs ? (ps: [ ]),
    }:
    let
      project = readProject path;
      source = projectSource project;
      repo =
        if repoId != null then
          repoId
        else if project.repoId != null then
          project.repoId
        else
          "local/${project.name}";
      selfRoot = rootOf self;
      # "" for a kernel at the flake's root, "/kernels/relu" for one below it.
      relative = substring (stringLength selfRoot) (-1) project.root;
      # A flake's revision: `rev` when the tree is clean, `dirtyRev` ("<rev>-dirty") when not.
      provenanceArgs =
        if isAttrs self && self ? rev then
          [ "--provenance-commit" self.rev ]
        else if isAttrs self && self ? dirtyRev then
          [ "--provenance-commit" (builtins.head (match "([0-9a-f]+)-dirty" self.dirtyRev)) "--provenance-dirty" ]
        else
          [ ];

      perSystem =
        system:
        let
          pkgs = pkgsFor system;
          pythonOf = variant: pythonFor { inherit pkgs variant; };
          kernelBuilder = kernelBuilderFor pkgs;
          candidates = candidatesFor project system;
          torchOf = variant: torchFor { inherit pkgs variant; python = pythonOf variant; };
          cudaOf =
            variant:
            if variant.backend == "cuda" then
              cudaToolkitFor {
                inherit pkgs variant;
                torch = torchOf variant;
              }
            else
              null;

          buildCommand =
            variant: pythonEnv:
            concatStringsSep " " (
              [
                "kernel-builder"
                "build"
                "."
                "--variant"
                variant.variant
                "--offline"
                "--python"
                "${pythonEnv}/bin/python"
                "--jobs"
                "\"$NIX_BUILD_CORES\""
              ]
              ++ optionals (uniqueId != null) [ "--unique-id" uniqueId ]
              ++ provenanceArgs
            );

          variantPackage =
            variant:
            let
              python = pythonOf variant;
              torch = torchOf variant;
              cuda = cudaOf variant;
              pythonEnv = python.withPackages (ps: [ (kernelBuilder ps) ] ++ optional (torch != null) torch);
            in
            pkgs.stdenv.mkDerivation (
              {
                pname = "${project.name}-${variant.variant}";
                version = toString project.version;
                src = source;
                nativeBuildInputs = [
                  pythonEnv
                  pkgs.cmake
                  pkgs.ninja
                ] ++ optional (cuda != null) cuda;
                # kernel-builder runs CMake and Ninja itself.
                dontConfigure = true;
                dontUseCmakeConfigure = true;
                dontUseNinjaBuild = true;
                dontUseNinjaInstall = true;
                dontUseNinjaCheck = true;
                # metadata.json holds a digest of every file: stripping or patching them would break it.
                dontFixup = true;
                buildPhase = ''
                  runHook preBuild
                  export HOME="$TMPDIR"
                  ${buildCommand variant pythonEnv}
                  runHook postBuild
                '';
                installPhase = ''
                  runHook preInstall
                  mkdir -p "$out"
                  cp -r "build/${variant.variant}" "$out/"
                  runHook postInstall
                '';
                passthru = {
                  inherit (variant) variant backend required;
                  inherit torch;
                  # Whether the torch of this nixpkgs gives this variant (else the build stops with
                  # kernel-builder's --offline message naming the torch it needs).
                  available = serves variant torch;
                };
                meta.description = "${project.name} ${variant.variant}, built by kernel-builder";
              }
              // (if cuda != null then { CUDA_HOME = cuda; } else { })
            );

          variants = attrsOf (variant: variant.variant) variantPackage candidates;
          available = filter (variant: variants.${variant.variant}.available) candidates;

          # Every variant this nixpkgs can build, joined into one build/ tree (with CARD.md, as `build` writes it).
          bundle = pkgs.symlinkJoin {
            name = "${project.name}-${toString project.version}-build";
            paths = map (variant: variants.${variant.variant}) available;
            postBuild = if project.hasCard then ''cp ${source}/CARD.md "$out/CARD.md"'' else "";
            passthru.variants = map (variant: variant.variant) available;
          };

          checkPackage =
            variant:
            let
              package = variants.${variant.variant};
              python = pythonOf variant;
              pythonEnv = python.withPackages (
                ps: [ (kernelBuilder ps) package.torch ps.pytest ] ++ pythonCheckInputs ps
              );
            in
            pkgs.stdenv.mkDerivation {
              name = "${project.name}-${variant.variant}-tests";
              src = source;
              nativeBuildInputs = [ pythonEnv ];
              dontConfigure = true;
              buildPhase = ''
                runHook preBuild
                export HOME="$TMPDIR"
                mkdir -p build
                cp -r "${package}/${variant.variant}" build/
                chmod -R u+w build
                export LOCAL_KERNELS="${repo}=$PWD/build"
                python -m pytest tests -p no:cacheprovider
                runHook postBuild
              '';
              installPhase = ''
                touch "$out"
              '';
            };
          tested = filter (variant: elem variant.backend checkBackends && project.hasTests) available;

          devShell =
            let
              python = pythonOf null;
              torch = devTorchFor { inherit pkgs python; };
              pythonEnv = python.withPackages (ps: [ (kernelBuilder ps) torch ps.pytest ] ++ pythonCheckInputs ps);
            in
            pkgs.mkShell {
              packages = [
                pythonEnv
                pkgs.cmake
                pkgs.ninja
              ];
              # `nix develop` starts in the flake's directory: get_kernel("${repo}") loads the project's build/.
              shellHook = ''
                export LOCAL_KERNELS="${repo}=$PWD${relative}/build"
              '';
            };
        in
        {
          packages = variants // {
            inherit bundle;
            default = bundle;
          };
          checks = attrsOf (variant: "tests-${variant.variant}") checkPackage tested;
          devShells.default = devShell;
        };
      outputs = genAttrs systems perSystem;
    in
    {
      packages = genAttrs systems (system: outputs.${system}.packages);
      checks = genAttrs systems (system: outputs.${system}.checks);
      devShells = genAttrs systems (system: outputs.${system}.devShells);
    };
in
{
  inherit genKernelFlakeOutputs defaultTorchFor serves;
}
