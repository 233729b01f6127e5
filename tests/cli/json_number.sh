#!/usr/bin/env bash
# json_number.sh FILE KEY: prints the first number stored under "KEY": in a JSON file.
grep -o "\"$2\": *-\?[0-9.eE+-]*" "$1" | head -1 | sed 's/.*: *//'
