from evalglass.entry import main

main()
