from kvbench.entry import main

main()
