from widgets.notebooks import main

main()
