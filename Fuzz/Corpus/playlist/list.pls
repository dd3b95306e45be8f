[playlist]
File1=a.ogg
Title1=A
File2=sub/b.mp3
NumberOfEntries=2
Version=2
