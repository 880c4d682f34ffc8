from icl.cli import main

main()
