from evalglass.cli import main

main()
