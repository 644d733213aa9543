#!/bin/bash
# What a change touches (issue 66; docs/architecture.md, "What a change touches"): each change's
# heading there gives a number of files and its list names them. This check holds both to the
# code and fails naming the change whose count or list is wrong:
#   - each heading's count is the number of files its list names (x.{h,cpp} is two);
#   - add a mixer: the files that name a MixerKind enumerator (MixerKind::X) are the ones listed;
#   - change a mixer: the files outside engine/src/model/ that name a mixer's module type (a
#     struct ...Impl of engine/src/model/mixers/) are the ones listed;
#   - add a task: every task's maker is named in exactly the listed files (<name> its own);
#   - add an analysis: the files outside engine/src/model/ that observe the forward (include
#     model/sites.h) are the ones listed, each an eval/<name>.{h,cpp} built by engine/CMakeLists.txt;
#   - add a view: every registered view's .cpp is built by app/CMakeLists.txt, and a view's header
#     is included, besides by its own files and the registry, only by the files listed.
#   usage: check_change_counts.sh REPO_DIR
set -u
cd "${1:?usage: check_change_counts.sh REPO_DIR}" || exit 2
doc=docs/architecture.md
fail=0
complain() {
  echo "$1"
  fail=1
}

# The lines of the doc's section "### TITLE ..." up to the next heading.
section() {
  awk -v t="### $1 (" '/^## / {inside = ($0 == "## What a change touches")} index($0, t) == 1 && inside {on = 1; next}
                       /^#/ {on = 0} on' "$doc"
}
# Backticked paths (with a /) of some lines on stdin, x.{h,cpp} expanded, one a line.
paths_in() {
  grep -oE '`[^`]*/[^`]*`' | tr -d '`' | while IFS= read -r p; do
    if [[ $p =~ ^(.*)\{([^}]*)\}(.*)$ ]]; then
      IFS=, read -ra alts <<<"${BASH_REMATCH[2]}"
      for a in "${alts[@]}"; do echo "${BASH_REMATCH[1]}$a${BASH_REMATCH[3]}"; done
    else
      echo "$p"
    fi
  done
}
# The files a change's list names (its "- `path`..." lines).
listed() { section "$1" | grep -E '^- `' | paths_in | sort -u; }
# The paths of the section's paragraph that follows the one ending with PHRASE (a list of files).
named_after() {
  section "$1" | awk -v p="$2" 'done {next} /^$/ {if (listing) done = 1; if (ready) listing = 1; next}
                                index($0, p) {ready = 1; next} listing' | paths_in | sort -u
}
# Sources of the engine and the studio, tests left out.
sources() { find engine app \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort; }
# Compares two sorted lists: CHANGE WHAT EXPECTED ACTUAL.
same() {
  [[ $3 == "$4" ]] && return
  local code_only doc_only
  code_only=$(comm -13 <(echo "$3") <(echo "$4") | paste -sd' ')
  doc_only=$(comm -23 <(echo "$3") <(echo "$4") | paste -sd' ')
  complain "$doc, \"$1\": $2 differ:${code_only:+ in the code, not the doc: $code_only;}${doc_only:+ in the doc, not the code: $doc_only}"
}

# Each heading's count against its list.
while IFS= read -r heading; do
  title=${heading#\#\#\# }
  title=${title% (*}
  want=$(sed -E 's/.*\(([0-9]+) files?\)$/\1/' <<<"$heading")
  have=$(listed "$title" | wc -l)
  ((have == want)) || complain "$doc, \"$title\": the heading says $want files, its list names $have"
done < <(awk '/^## / {inside = ($0 == "## What a change touches")} inside' "$doc" | grep -E '^### .*\([0-9]+ files?\)$')
for title in "Change a mixer" "Add a mixer" "Add a task" "Add an analysis" "Add a view"; do
  [[ -n $(section "$title") ]] || complain "$doc: no section \"### $title (N files)\" under \"What a change touches\""
done

# Add a mixer: who names a kind.
kinds=$(sed -n '/^enum class MixerKind {/,/^};/p' engine/include/hsm/mixer_kind.h | grep -oE '^ *[A-Z][A-Za-z0-9]*' | tr -d ' ' | paste -sd'|')
same "Add a mixer" "the files that name a MixerKind enumerator" \
  "$(named_after "Add a mixer" "only by these files")" \
  "$(sources | xargs grep -lE "MixerKind::($kinds)\b" | sort)"

# Change a mixer: who knows a mixer's type outside the model.
types=$(grep -ohE '^struct [A-Za-z0-9]+Impl\b' engine/src/model/mixers/*.h | awk '{print $2}' | grep -vx MixerImpl | paste -sd'|')
same "Change a mixer" "the files outside engine/src/model/ that name a mixer's type" \
  "$(named_after "Change a mixer" "only by these files")" \
  "$(sources | grep -v '^engine/src/model/' | xargs grep -lwE "$types" | sort)"

# Add a task: each task's maker is named in the listed files and nowhere else.
task_list=$(listed "Add a task")
for maker in $(grep -oE 'make_[a-z0-9_]+' engine/src/tasks/task_util.h | sort -u); do
  name=${maker#make_}
  want=$(sed "s/<name>/$name/" <<<"$task_list")
  have=$( (sources | xargs grep -lw "$maker"; grep -q "src/tasks/$name.cpp" engine/CMakeLists.txt && echo engine/CMakeLists.txt) | sort -u)
  same "Add a task" "the files of task $name" "$want" "$have"
done

# Add an analysis: the observers, each eval/<name>.{h,cpp} and built.
analyses=$(sources | grep -v '^engine/src/model/' | xargs grep -l '#include "model/sites.h"' | sort)
same "Add an analysis" "the files outside engine/src/model/ that observe the forward (model/sites.h)" \
  "$(named_after "Add an analysis" "The analyses that observe the forward now")" "$analyses"
analysis_list=$(listed "Add an analysis")
for file in $analyses; do
  name=$(basename "$file" .cpp)
  for f in $(sed "s/<name>/$name/" <<<"$analysis_list"); do
    case $f in
      */CMakeLists.txt) grep -q "src/eval/$name.cpp" "$f" || complain "$doc, \"Add an analysis\": $f does not build $file" ;;
      *) [[ -e $f ]] || complain "$doc, \"Add an analysis\": $file has no $f" ;;
    esac
  done
done

# Add a view: built by its CMake list; its header included only by its own files, the registry
# and the files listed as wired to it.
wired=$(named_after "Add a view" "only by these files")
registry=app/gui/view_registry.cpp
[[ -f $registry ]] || complain "$registry, the view registry this check reads, is missing: correct the path here"
for header in $(grep -oE '#include "gui/views/[a-z_]+_view\.h"' "$registry" | grep -oE 'gui/views/[a-z_]+_view\.h'); do
  name=$(basename "$header" .h)
  grep -q "gui/views/$name.cpp" app/CMakeLists.txt || complain "$doc, \"Add a view\": app/CMakeLists.txt does not build app/gui/views/$name.cpp"
  for f in $(sources | xargs grep -l "#include \"$header\"" | grep -vE "^app/gui/views/$name\.(h|cpp)$|^$registry$"); do
    grep -qx "$f" <<<"$wired" || complain "$doc, \"Add a view\": $f includes $header and is not among the files listed as wired to views"
  done
done

if ((fail)); then
  echo "docs/architecture.md, \"What a change touches\", and the code disagree: correct the list or the count, or the code"
  exit 1
fi
echo "change counts: docs/architecture.md's lists and counts hold (mixers, tasks, analyses, views)"
