{
  description = "kernel-builder: build, publish and load PyTorch compute kernels";

  # No flake.lock is committed yet: the first `nix flake lock` (or any `nix build`) pins this input.
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";

  outputs =
    { self, nixpkgs }:
    let
      # The functions of lib/; the matrix they read is kernel_builder/formats/build-matrix.json, shared with the tool.
      lib = import ./lib { inherit nixpkgs; };
      package = import ./lib/package.nix;
      forAllSystems =
        f:
        builtins.listToAttrs (
          map (system: {
            name = system;
            value = f system (import nixpkgs { inherit system; });
          }) lib.matrixSystems
        );
    in
    {
      inherit lib;

      packages = forAllSystems (
        system: pkgs: rec {
          kernel-builder = lib.kernelBuilderFor pkgs pkgs.python3.pkgs;
          default = kernel-builder;
        }
      );

      apps = forAllSystems (
        system: pkgs: rec {
          kernel-builder = {
            type = "app";
            program = "${self.packages.${system}.kernel-builder}/bin/kernel-builder";
            meta.description = "kernel-builder's command line";
          };
          default = kernel-builder;
        }
      );

      # For working on kernel-builder itself: its dependencies and test tools (from pyproject.toml, those
      # nixpkgs has), CMake and Ninja; the checkout is importable, so `python -m kernel_builder` runs it.
      devShells = forAllSystems (
        system: pkgs:
        let
          python = pkgs.python3;
          names =
            package.buildSystemNames python.pythonVersion
            ++ package.runtimeNames python.pythonVersion
            ++ package.developmentNames python.pythonVersion;
          available = builtins.filter (name: python.pkgs ? ${name}) names;
        in
        {
          default = pkgs.mkShell {
            packages = [
              (python.withPackages (ps: map (name: ps.${name}) available))
              pkgs.cmake
              pkgs.ninja
            ];
            shellHook = ''
              export PYTHONPATH="$PWD''${PYTHONPATH:+:$PYTHONPATH}"
            '';
          };
        }
      );

      templates = rec {
        kernel = {
          path = ./templates/kernel;
          description = "A kernel project (build.toml, CPU and CUDA sources, tests) whose flake builds its variants";
          welcomeText = ''
            # A new kernel project

            - Set `inputs.kernel-builder.url` in flake.nix to the kernel-builder flake you used.
            - `nix build .#bundle` builds every variant your nixpkgs' torch provides; `nix flake check` runs tests/.
            - `nix develop` gives a shell with torch and kernel-builder: `kernel-builder build`, then `pytest tests`.
          '';
        };
        default = kernel;
      };
    };
}
