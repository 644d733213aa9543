# `make package` (CPack's DEB generator): build/hsm-studio_<version>-1+deb<N>_<arch>.deb with the
# programs, the tokenizer plugin and the data in the installed layout (top-level
# CMakeLists.txt), a desktop entry, an icon in the hicolor theme, AppStream metainfo and man
# pages. Its dependencies are computed by dpkg-shlibdeps from the binaries, so
# `apt install ./hsm-studio_*.deb` on a fresh Debian 12 pulls in LibTorch, Qt and the rest.
# `make package-test` installs it, runs it from /tmp and removes it (packaging/package-test.sh).

# The package's identity, in one place. The app ID names the desktop entry, the icon and the
# metainfo, as AppStream asks.
set(HSM_APP_ID "io.github.hsm_studio.hsm_studio")
set(HSM_HOMEPAGE "https://github.com/hsm-studio/hsm-studio")
set(HSM_SCREENSHOT_URL "https://raw.githubusercontent.com/hsm-studio/hsm-studio/main/docs/screenshots/starter-training.png")
set(HSM_MAINTAINER "HSM Studio developers <hsm-studio@users.noreply.github.com>")
string(TIMESTAMP HSM_RELEASE_DATE "%Y-%m-%d" UTC)
string(TIMESTAMP HSM_RELEASE_DATE_RFC2822 "%a, %d %b %Y %H:%M:%S +0000" UTC)

# The release it was built on, in the Debian revision: dpkg-shlibdeps writes the build machine's
# library versions into Depends (Debian 12's libtorch1.13, Debian 13's libtorch2.6), so a package
# built on one release does not install on the other, and the two must not be confused:
# hsm-studio_0.1.0-1+deb12_amd64.deb and hsm-studio_0.1.0-1+deb13_amd64.deb (Ubuntu 24.04:
# 1+ubuntu24.04; a release without a version number, such as Debian testing, by its code name).
set(HSM_DEB_RELEASE "")
if(EXISTS /etc/os-release)
  file(STRINGS /etc/os-release os_release_lines REGEX "^(ID|VERSION_ID|VERSION_CODENAME)=")
  foreach(line IN LISTS os_release_lines)
    if(line MATCHES "^([A-Z_]+)=\"?([^\"]*)\"?$")
      set(os_${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
    endif()
  endforeach()
  if(os_ID STREQUAL "debian" AND os_VERSION_ID)
    set(HSM_DEB_RELEASE "deb${os_VERSION_ID}")
  elseif(os_ID AND os_VERSION_ID)
    set(HSM_DEB_RELEASE "${os_ID}${os_VERSION_ID}")
  elseif(os_ID AND os_VERSION_CODENAME)
    set(HSM_DEB_RELEASE "${os_ID}.${os_VERSION_CODENAME}")
  endif()
endif()
if(HSM_DEB_RELEASE STREQUAL "")
  set(HSM_DEB_REVISION "1")
else()
  set(HSM_DEB_REVISION "1+${HSM_DEB_RELEASE}")
endif()
set(HSM_DEB_VERSION "${PROJECT_VERSION}-${HSM_DEB_REVISION}")  # the changelog's version too

set(HSM_PACKAGING_OUT "${CMAKE_BINARY_DIR}/packaging")
configure_file("${CMAKE_CURRENT_LIST_DIR}/hsm-studio.desktop.in" "${HSM_PACKAGING_OUT}/${HSM_APP_ID}.desktop" @ONLY)
configure_file("${CMAKE_CURRENT_LIST_DIR}/hsm-studio.metainfo.xml.in" "${HSM_PACKAGING_OUT}/${HSM_APP_ID}.metainfo.xml"
               @ONLY)
install(FILES "${HSM_PACKAGING_OUT}/${HSM_APP_ID}.desktop" DESTINATION share/applications)
install(FILES "${HSM_PACKAGING_OUT}/${HSM_APP_ID}.metainfo.xml" DESTINATION share/metainfo)
install(FILES "${CMAKE_CURRENT_LIST_DIR}/hsm-studio.svg" DESTINATION share/icons/hicolor/scalable/apps
        RENAME "${HSM_APP_ID}.svg")
# Debian's policy: every package has its copyright file and a changelog, gzipped.
configure_file("${CMAKE_CURRENT_LIST_DIR}/changelog.in" "${HSM_PACKAGING_OUT}/changelog" @ONLY)
add_custom_command(OUTPUT "${HSM_PACKAGING_OUT}/changelog.gz"
                   COMMAND gzip -9nkf "${HSM_PACKAGING_OUT}/changelog"
                   DEPENDS "${HSM_PACKAGING_OUT}/changelog" VERBATIM)
add_custom_target(package_changelog ALL DEPENDS "${HSM_PACKAGING_OUT}/changelog.gz")
install(FILES "${CMAKE_CURRENT_LIST_DIR}/copyright" "${HSM_PACKAGING_OUT}/changelog.gz" DESTINATION share/doc/hsm-studio)

# Man pages from the programs' own --help and --version (help2man), with the sections --help
# has no room for (packaging/*.h2m), gzipped as Debian installs them.
find_program(HSM_HELP2MAN help2man)
if(HSM_HELP2MAN)
  set(man_pages)
  foreach(program hsm hsm-studio)
    set(page "${HSM_PACKAGING_OUT}/${program}.1")
    if(program STREQUAL "hsm")
      set(what "train, inspect and sample small language models with Hierarchical Shift Mixing")
    else()
      set(what "desktop studio to train, inspect and play with small language models")
    endif()
    add_custom_command(
      OUTPUT "${page}.gz"
      COMMAND ${CMAKE_COMMAND} -E env QT_QPA_PLATFORM=offscreen ${HSM_HELP2MAN} --no-info --no-discard-stderr
              --section 1 --name "${what}" --include "${CMAKE_CURRENT_LIST_DIR}/${program}.h2m" --output "${page}"
              "$<TARGET_FILE:${program}>"
      COMMAND gzip -9nf "${page}"
      DEPENDS ${program} "${CMAKE_CURRENT_LIST_DIR}/${program}.h2m"
      COMMENT "Writing the man page of ${program} (help2man)"
      VERBATIM)
    list(APPEND man_pages "${page}.gz")
  endforeach()
  add_custom_target(man_pages ALL DEPENDS ${man_pages})
  install(FILES ${man_pages} DESTINATION share/man/man1)
else()
  message(WARNING "help2man not found (packaging/install-deps.sh installs it): the .deb will have no man pages")
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME hsm-studio)
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_VENDOR "HSM Studio")
set(CPACK_PACKAGE_CONTACT "${HSM_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "studio to train, inspect and play with small language models")
# The control file's description, wrapped as Debian wants it (CPack 3.25 keeps long lines).
string(CONCAT CPACK_PACKAGE_DESCRIPTION
       "HSM Studio trains small GPT-style language models on the CPU and shows\n"
       "what they learned: mixing weights, mixing matrices, attention indicators\n"
       "and generated text tinted by probability. Attention can be replaced by\n"
       "Hierarchical Shift Mixing or the other token mixers of the papers it\n"
       "follows. It ships every paper configuration as a preset, three trained\n"
       "demo models and a slice of TinyStories to train a small model on in\n"
       "about two minutes. The hsm command-line tool trains, evaluates and\n"
       "samples the same runs.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_OUTPUT_FILE_PREFIX "${CMAKE_BINARY_DIR}")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_RELEASE "${HSM_DEB_REVISION}")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # hsm-studio_<version>-<release>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "${HSM_HOMEPAGE}")
# zstd: the ~42 MB payload (mostly the bundled models' weights, which no compressor shrinks much)
# in 0.6 s of CPU to 32.5 MB, where xz -6 took 44 s for 29.9 MB (-T0 no faster than -T1 here)
# and was the longest part of `make package`, in CI too. dpkg reads zstd
# since 1.21.18 (Debian 12 has 1.21.22; Ubuntu's own packages use it since 21.10).
set(CPACK_DEBIAN_COMPRESSION_TYPE zstd)
set(CPACK_THREADS 0)
# Debian's libtorch links the generic reference BLAS unless OpenBLAS is installed, about 25x
# slower matrix products (README.md, "Set-up"); nothing in the binaries names it, so dpkg-shlibdeps
# cannot find it.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libopenblas0-pthread")
include(CPack)
