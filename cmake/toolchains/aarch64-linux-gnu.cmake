# Cross build for ARM64 Linux on a Debian x86-64 machine: Debian's g++-aarch64-linux-gnu and the
# arm64 builds of the libraries from Debian multiarch (scripts/setup.sh --arm64 installs both).
# Programs built here run through qemu-aarch64 (qemu-user-static), so ctest runs the cross-built
# tests as it runs native ones.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# The target's libraries and headers: the cross toolchain's sysroot and Debian's multiarch
# folders (/usr/lib/aarch64-linux-gnu, with arch-independent headers and CMake packages in /usr).
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config reads the arm64 .pc files, never the build machine's.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# -L /: qemu finds the arm64 dynamic loader and libraries of Debian multiarch (libc6:arm64, which
# the :arm64 -dev packages bring). Not the cross toolchain's own copy in /usr/aarch64-linux-gnu:
# under qemu 7.2 its glibc never returns from the first pthread_create (100% CPU, no clone).
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static -L /)
